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
		1:  "6055938b6219e712c4dff712750873dbbf9aa04ee1e79e7d7901e8bce646dbbd",
		7:  "e60c8e7272eba75b545a4b0c879bf1d05c5988e0b6882e64032505753cee5117",
		11: "d91e299e8b5f6dccebc91b923f7a1ae5f44e768a5aaeadf46159860fd69a8dd4",
		42: "dc40897a4a481dadfc2bfceaf145eaddef1b165d0a115aaf674880db9448a2e7",
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
