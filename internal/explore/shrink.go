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
	sh := &shrinker{ctx: ctx, fails: fails, budget: budget, best: clone(sc), progress: true}
	for sh.progress && sh.runs < sh.budget {
		sh.progress = false
		for _, phase := range []func() error{sh.removeSteps, sh.removeFaults, sh.simplifyValues, sh.fewerReplicas} {
			if err := phase(); err != nil {
				return sh.best, sh.runs, err
			}
		}
	}
	return sh.best, sh.runs, nil
}

// shrinker holds one shrink's state: the smallest failing scenario so far and the runs spent.
type shrinker struct {
	ctx      context.Context
	fails    Predicate
	budget   int
	best     *simulate.Scenario
	runs     int
	progress bool
}

// accept runs a candidate and keeps it as the best when it still fails.
func (sh *shrinker) accept(cand *simulate.Scenario) (bool, error) {
	if sh.runs >= sh.budget {
		return false, nil
	}
	if err := cand.Validate(); err != nil {
		return false, nil // not an order the platform could play: skip without spending a run
	}
	sh.runs++
	ok, err := sh.fails(sh.ctx, cand)
	if ok && err == nil {
		sh.best, sh.progress = cand, true
	}
	return ok, err
}

// removeSteps removes runs of steps, largest first.
func (sh *shrinker) removeSteps() error {
	for chunk := len(sh.best.Steps) / 2; chunk >= 1; chunk /= 2 {
		for i := len(sh.best.Steps) - chunk; i >= 0; i-- {
			if len(sh.best.Steps) <= 1 {
				break
			}
			if i+chunk > len(sh.best.Steps) {
				continue
			}
			cand := clone(sh.best)
			cand.Steps = append(append([]simulate.Step{}, sh.best.Steps[:i]...), sh.best.Steps[i+chunk:]...)
			if _, err := sh.accept(cand); err != nil {
				return err
			}
		}
	}
	return nil
}

// removeFaults removes a step's faults: both kinds, then the callback fault, then the double faults.
func (sh *shrinker) removeFaults() error {
	for i := range sh.best.Steps {
		if sh.best.Steps[i].Fault == nil && len(sh.best.Steps[i].Double) == 0 {
			continue
		}
		for _, strip := range []func(*simulate.Step){
			func(st *simulate.Step) { st.Fault = nil; st.Double = nil },
			func(st *simulate.Step) { st.Fault = nil },
			func(st *simulate.Step) { st.Double = nil },
		} {
			cand := clone(sh.best)
			strip(&cand.Steps[i])
			if cand.Steps[i].Equal(sh.best.Steps[i]) {
				continue
			}
			ok, err := sh.accept(cand)
			if err != nil {
				return err
			}
			if ok {
				break
			}
		}
	}
	return nil
}

// simplifyValues gives each step the simpler values of its op's simplify hook (Step.Simplified: a turn not
// kept live, one box, at most a minute of clock).
func (sh *shrinker) simplifyValues() error {
	for i := range sh.best.Steps {
		simpler := sh.best.Steps[i].Simplified()
		if simpler.Equal(sh.best.Steps[i]) {
			continue
		}
		cand := clone(sh.best)
		cand.Steps[i] = simpler
		if _, err := sh.accept(cand); err != nil {
			return err
		}
	}
	return nil
}

// fewerReplicas maps the scenario onto fewer replicas, fewest first.
func (sh *shrinker) fewerReplicas() error {
	for n := 1; n < sh.best.Replicas; n++ {
		ok, err := sh.accept(withReplicas(sh.best, n))
		if err != nil {
			return err
		}
		if ok {
			break
		}
	}
	return nil
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
			out.Steps[i].Replica = simulate.FoldReplica(k, n)
		}
	}
	return out
}

// clone deep-copies a scenario (simulate.Scenario.Clone), so that shrinking never aliases steps or
// configuration.
func clone(sc *simulate.Scenario) *simulate.Scenario { return sc.Clone() }
