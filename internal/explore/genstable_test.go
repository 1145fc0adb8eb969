package explore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"testing"

	"github.com/astrabox-dev/astrabox/internal/simulate"
)

// TestGeneratedScenariosAreStable pins the scenarios the generator makes for a few seeds: moving the op
// weights, the preconditions or the emitters (between explore and simulate's op registry) must leave every
// generated scenario of a seed byte for byte the same. A deliberate change to the generator updates the
// hashes below.
func TestGeneratedScenariosAreStable(t *testing.T) {
	for seed, want := range map[int64]string{
		1:  "5e7c8dd62e820bd13251ad2f525ba95c1ccae28a0c0b83a64abec93ec1e26871",
		7:  "7a3b97e13a8f95e6f738ad5da20fa23f753d2714179aef9715b0cc703549109e",
		11: "4f65e39ab29bec5aa8294fe8e9ae432441976c77faf87a6401c90875dd572bc0",
		42: "478df21ebaa86ce3d0055470368544088df2b58042319a748408007681f943ea",
	} {
		h := sha256.New()
		for i := 0; i < 300; i++ {
			y, err := Generate(seed, i).YAML()
			if err != nil {
				t.Fatal(err)
			}
			h.Write(y)
		}
		if got := hex.EncodeToString(h.Sum(nil)); got != want {
			t.Errorf("seed %d: the first 300 generated scenarios hash to %s, want %s", seed, got, want)
		}
	}
}

// liveBoxes is a synthetic failure that needs values: a prewarm and a turn whose write is kept live, so
// shrinking must keep both steps (and one box) while it simplifies every other value.
func liveBoxes(_ context.Context, sc *simulate.Scenario) (bool, error) {
	prewarm, live := false, false
	for _, st := range sc.Steps {
		prewarm = prewarm || st.Op == simulate.OpPrewarm
		live = live || (st.Op == simulate.OpTurn && !st.LiveFor.IsZero())
	}
	return prewarm && live, nil
}

// TestShrunkScenariosAreStable pins what shrinking makes of generated failures, so that moving the value
// simplification into the op registry keeps every shrunk scenario (and the runs spent) the same.
func TestShrunkScenariosAreStable(t *testing.T) {
	h := sha256.New()
	for _, fails := range []Predicate{retryElsewhere, liveBoxes} {
		found := 0
		for i := 0; i < 400 && found < 6; i++ {
			sc := Generate(5, i)
			if ok, _ := fails(context.Background(), sc); !ok {
				continue
			}
			found++
			shrunk, runs, err := Shrink(context.Background(), sc, fails, 120)
			if err != nil {
				t.Fatal(err)
			}
			y, _ := shrunk.YAML()
			fmt.Fprintf(h, "%d %d\n%s", i, runs, y)
		}
		if found < 6 {
			t.Fatalf("only %d generated scenarios have the synthetic failure", found)
		}
	}
	if got, want := hex.EncodeToString(h.Sum(nil)), "0620f7787e2e56ee28e521e82239813c99677e4957c030fe8077db81f6656791"; got != want {
		t.Errorf("shrunk scenarios hash to %s, want %s", got, want)
	}
}
