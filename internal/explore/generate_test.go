package explore

import (
	"bytes"
	"context"
	"reflect"
	"testing"

	"github.com/astrabox-dev/astrabox/internal/simulate"
)

func TestGenerateIsDeterministicAndValid(t *testing.T) {
	used := map[string]int{}
	for i := 0; i < 500; i++ {
		a, _ := Generate(7, i).YAML()
		b, _ := Generate(7, i).YAML()
		if !bytes.Equal(a, b) {
			t.Fatalf("scenario %d differs between two generations", i)
		}
		sc, err := simulate.ParseScenario("generated.yaml", a)
		if err != nil {
			t.Fatalf("scenario %d does not parse back: %v\n%s", i, err, a)
		}
		for _, st := range sc.Steps {
			used[st.Op]++
		}
	}
	if len(used) < 15 {
		t.Errorf("500 generated scenarios used only %d ops", len(used))
	}
	for _, op := range ops.generated {
		if used[op.Name] == 0 {
			t.Errorf("500 generated scenarios never used %s", op.Name)
		}
	}
	if a, _ := Generate(7, 1).YAML(); bytes.Equal(a, must(Generate(8, 1).YAML())) {
		t.Error("different seeds gave the same scenario")
	}
}

func must(b []byte, _ error) []byte { return b }

// retryElsewhere is a synthetic failure: a retry of an attempt on another replica than its turn.
func retryElsewhere(_ context.Context, sc *simulate.Scenario) (bool, error) {
	where := map[string]string{}
	for _, st := range sc.Steps {
		switch st.Op {
		case simulate.OpTurn:
			where[st.Session+"/"+st.Attempt] = st.Replica
		case simulate.OpRetry:
			if r, ok := where[st.Session+"/"+st.Attempt]; ok && r != st.Replica {
				return true, nil
			}
		}
	}
	return false, nil
}

func TestShrinkFindsASmallestFailingScenario(t *testing.T) {
	var start *simulate.Scenario
	for i := 0; i < 500 && start == nil; i++ {
		sc := Generate(11, i)
		if ok, _ := retryElsewhere(context.Background(), sc); ok && len(sc.Steps) >= 8 {
			start = sc
		}
	}
	if start == nil {
		t.Fatal("no generated scenario has the synthetic failure")
	}
	shrunk, runs, err := Shrink(context.Background(), start, retryElsewhere, 200)
	if err != nil {
		t.Fatal(err)
	}
	if ok, _ := retryElsewhere(context.Background(), shrunk); !ok {
		t.Fatal("the shrunk scenario no longer fails")
	}
	if len(shrunk.Steps) != 3 {
		t.Fatalf("shrunk to %d steps (want 3: start, turn, retry elsewhere): %v", len(shrunk.Steps), shrunk.StepLines())
	}
	if shrunk.Replicas != 2 {
		t.Errorf("shrunk to %d replicas, want 2", shrunk.Replicas)
	}
	for _, st := range shrunk.Steps {
		if st.Fault != nil || len(st.Double) > 0 || !st.LiveFor.IsZero() {
			t.Errorf("a fault or value survived shrinking: %+v", st)
		}
	}
	again, runs2, _ := Shrink(context.Background(), start, retryElsewhere, 200)
	a, _ := shrunk.YAML()
	b, _ := again.YAML()
	if !bytes.Equal(a, b) || runs != runs2 {
		t.Fatal("shrinking is not deterministic")
	}
	if _, used, _ := Shrink(context.Background(), start, retryElsewhere, 5); used > 5 {
		t.Fatalf("shrinking spent %d runs with a budget of 5", used)
	}
}

// TestGuidedScenariosAreLonger checks the lengths of fresh scenarios: blind generation gives 3 to 12 steps,
// guided generation (with situations to steer by) 6 to 20, every one a valid platform order, and over many
// indexes both ends of each range come.
func TestGuidedScenariosAreLonger(t *testing.T) {
	lengths := func(novel map[string]bool) (lo, hi int) {
		lo = 1 << 30
		for i := 0; i < 400; i++ {
			sc := generate(3, i, nil, novel)
			if err := sc.Validate(); err != nil {
				t.Fatalf("scenario %d is invalid: %v", i, err)
			}
			lo, hi = min(lo, len(sc.Steps)), max(hi, len(sc.Steps))
		}
		return lo, hi
	}
	if lo, hi := lengths(nil); lo != 3 || hi != 12 {
		t.Errorf("blind scenarios have %d to %d steps, want 3 to 12", lo, hi)
	}
	if lo, hi := lengths(map[string]bool{}); lo != 6 || hi != 20 {
		t.Errorf("guided scenarios have %d to %d steps, want 6 to 20", lo, hi)
	}
}

// TestLongerBlindScenariosHaveGuidedLengths checks Options.Longer, the benchmarks' baseline at equal length:
// blind scenarios get guided generation's lengths (freshMin+guidedMoreMin to freshMax+guidedMoreMax steps,
// spread over that range), stay valid and seeded, and without it blind exploration's scenarios are Generate's.
func TestLongerBlindScenariosHaveGuidedLengths(t *testing.T) {
	long, short := Options{Seed: 4, Longer: true}, Options{Seed: 4}
	lo, hi := freshMax+guidedMoreMax, 0
	for i := 0; i < 300; i++ {
		sc := long.scenario(i)
		if err := sc.Validate(); err != nil {
			t.Fatalf("scenario %d: %v", i, err)
		}
		n := len(sc.Steps)
		if n < freshMin+guidedMoreMin || n > freshMax+guidedMoreMax {
			t.Fatalf("scenario %d has %d steps, want %d to %d", i, n, freshMin+guidedMoreMin, freshMax+guidedMoreMax)
		}
		lo, hi = min(lo, n), max(hi, n)
		if !reflect.DeepEqual(sc, long.scenario(i)) {
			t.Fatalf("scenario %d differs between two calls", i)
		}
		if !reflect.DeepEqual(short.scenario(i), Generate(4, i)) {
			t.Fatalf("without Longer, scenario %d is not Generate's", i)
		}
	}
	if lo > freshMin+guidedMoreMin+2 || hi < freshMax+guidedMoreMax-2 {
		t.Errorf("lengths span only %d to %d steps", lo, hi)
	}
}
