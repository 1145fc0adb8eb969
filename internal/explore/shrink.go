package explore

import (
	"context"

	"github.com/astrabox-dev/astrabox/internal/simulate"
)

// Predicate runs a candidate scenario and tells whether it still fails the check being shrunk.
type Predicate func(ctx context.Context, sc *simulate.Scenario) (bool, error)

// Shrink reduces a failing scenario to a smaller one that still fails, deterministically: it removes runs of
// steps (halving their length), then faults, then simplifies values, then removes replicas, and repeats while
// something shrank, within budget runs. It returns the smallest failing scenario found and the runs spent.
func Shrink(ctx context.Context, sc *simulate.Scenario, fails Predicate, budget int) (*simulate.Scenario, int, error) {
	best := clone(sc)
	runs := 0
	progress := true
	// accept runs a candidate and keeps it as the best when it still fails.
	accept := func(cand *simulate.Scenario) (bool, error) {
		if runs >= budget {
			return false, nil
		}
		if err := cand.Validate(); err != nil {
			return false, nil // not an order the platform could play: skip without spending a run
		}
		runs++
		ok, err := fails(ctx, cand)
		if ok && err == nil {
			best, progress = cand, true
		}
		return ok, err
	}
	for progress && runs < budget {
		progress = false
		// 1. Remove runs of steps, largest first.
		for chunk := len(best.Steps) / 2; chunk >= 1; chunk /= 2 {
			for i := len(best.Steps) - chunk; i >= 0; i-- {
				if len(best.Steps) <= 1 {
					break
				}
				if i+chunk > len(best.Steps) {
					continue
				}
				cand := clone(best)
				cand.Steps = append(append([]simulate.Step{}, best.Steps[:i]...), best.Steps[i+chunk:]...)
				if _, err := accept(cand); err != nil {
					return best, runs, err
				}
			}
		}
		// 2. Remove faults.
		for i := range best.Steps {
			if best.Steps[i].Fault == nil && len(best.Steps[i].Double) == 0 {
				continue
			}
			for _, strip := range []func(*simulate.Step){
				func(st *simulate.Step) { st.Fault = nil; st.Double = nil },
				func(st *simulate.Step) { st.Fault = nil },
				func(st *simulate.Step) { st.Double = nil },
			} {
				cand := clone(best)
				strip(&cand.Steps[i])
				if cand.Steps[i].Equal(best.Steps[i]) {
					continue
				}
				ok, err := accept(cand)
				if err != nil {
					return best, runs, err
				}
				if ok {
					break
				}
			}
		}
		// 3. Simpler values.
		for i := range best.Steps {
			cand := clone(best)
			st := &cand.Steps[i]
			st.LiveFor, st.Images, st.Via = simulate.LiveFor{}, 0, ""
			if st.Boxes > 1 {
				st.Boxes = 1
			}
			if st.Op == simulate.OpAdvance && st.Seconds > 60 {
				st.Seconds = 60
			}
			if st.Equal(best.Steps[i]) {
				continue
			}
			if _, err := accept(cand); err != nil {
				return best, runs, err
			}
		}
		// 4. Fewer replicas.
		for n := 1; n < best.Replicas; n++ {
			ok, err := accept(withReplicas(best, n))
			if err != nil {
				return best, runs, err
			}
			if ok {
				break
			}
		}
	}
	return best, runs, nil
}

// withReplicas maps every replica rK of a scenario onto n replicas.
func withReplicas(sc *simulate.Scenario, n int) *simulate.Scenario {
	out := clone(sc)
	out.Replicas = n
	for i := range out.Steps {
		r := out.Steps[i].Replica
		if r == "" {
			continue
		}
		if k, ok := simulate.ParseReplica(r); ok && k > n {
			out.Steps[i].Replica = simulate.ReplicaName((k-1)%n + 1)
		}
	}
	return out
}

// clone deep-copies a scenario (simulate.Scenario.Clone), so that shrinking never aliases steps or
// configuration.
func clone(sc *simulate.Scenario) *simulate.Scenario { return sc.Clone() }
