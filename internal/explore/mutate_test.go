package explore

import (
	"math/rand"
	"reflect"
	"testing"

	"github.com/astrabox-dev/astrabox/internal/simulate"
)

// TestMutateVariesWithoutTouchingSeeds checks that variations are deterministic for a given random source,
// leave their seeds as they were, differ from them, and are often valid platform orders.
func TestMutateVariesWithoutTouchingSeeds(t *testing.T) {
	seeds := []*simulate.Scenario{Generate(1, 0), Generate(1, 1), Generate(1, 2)}
	before := []*simulate.Scenario{clone(seeds[0]), clone(seeds[1]), clone(seeds[2])}
	valid, changed := 0, 0
	for i := 0; i < 200; i++ {
		a := mutate(rand.New(rand.NewSource(int64(i))), seeds[i%3], 2, seeds, nil, nil)
		b := mutate(rand.New(rand.NewSource(int64(i))), seeds[i%3], 2, seeds, nil, nil)
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("variation %d differs between two runs from the same source", i)
		}
		if len(a.Steps) > maxSteps {
			t.Fatalf("variation %d has %d steps", i, len(a.Steps))
		}
		if a.Validate() == nil {
			valid++
		}
		if !reflect.DeepEqual(a.Steps, seeds[i%3].Steps) || a.Replicas != seeds[i%3].Replicas {
			changed++
		}
	}
	if !reflect.DeepEqual(seeds, before) {
		t.Error("mutate changed a seed")
	}
	if valid < 50 || changed < 150 {
		t.Errorf("%d of 200 variations valid, %d changed", valid, changed)
	}
}

// TestStepAtAfterADeletedStart inserts steps into a variation whose Session start an earlier change deleted:
// the generator's rebuilt state must not offer a retry of that Session's attempts (it once panicked choosing
// among none).
func TestStepAtAfterADeletedStart(t *testing.T) {
	sc := &simulate.Scenario{Name: "orphan", Replicas: 2, Steps: []simulate.Step{
		{Op: simulate.OpTurn, Session: "s1", Attempt: "t1", Replica: "r1"},
		{Op: simulate.OpRetry, Session: "s1", Attempt: "t1", Replica: "r2"},
	}}
	for i := 0; i < 500; i++ {
		st := stepAt(rand.New(rand.NewSource(int64(i))), sc, 2, nil, nil)
		if st.Op == simulate.OpRetry {
			t.Fatalf("offered %v, a retry of an attempt whose Session never started", st)
		}
	}
}
