package explore

import (
	"math/rand"

	"github.com/astrabox-dev/astrabox/internal/simulate"
)

// maxSteps bounds a varied scenario: insertions and splices never grow one past it.
const maxSteps = 30

// mutate varies base with one to three changes: insert a step (taken from a fresh scenario), delete one,
// swap two neighbours, change a step's faults or replica, change the number of replicas, or splice base with
// another seed. The result may break the platform's order rules; the caller validates it.
func mutate(rng *rand.Rand, base *simulate.Scenario, seeds []*simulate.Scenario, seed int64) *simulate.Scenario {
	sc := clone(base)
	for n := 1 + rng.Intn(3); n > 0; n-- {
		switch pickOp(rng) {
		case 0:
			donor := Generate(seed, 1<<20+rng.Intn(1<<20))
			st := donor.Steps[rng.Intn(len(donor.Steps))]
			if len(sc.Steps) < maxSteps {
				i := rng.Intn(len(sc.Steps) + 1)
				sc.Steps = append(sc.Steps[:i], append([]simulate.Step{st}, sc.Steps[i:]...)...)
			}
		case 1:
			if len(sc.Steps) > 1 {
				i := rng.Intn(len(sc.Steps))
				sc.Steps = append(sc.Steps[:i], sc.Steps[i+1:]...)
			}
		case 2:
			if len(sc.Steps) > 1 {
				i := rng.Intn(len(sc.Steps) - 1)
				sc.Steps[i], sc.Steps[i+1] = sc.Steps[i+1], sc.Steps[i]
			}
		case 3:
			changeFault(rng, &sc.Steps[rng.Intn(len(sc.Steps))])
		case 4:
			st := &sc.Steps[rng.Intn(len(sc.Steps))]
			if st.Replica != "" {
				st.Replica = simulate.ReplicaName(1 + rng.Intn(sc.Replicas))
			}
		case 5:
			changeReplicas(rng, sc)
		case 6:
			other := seeds[rng.Intn(len(seeds))]
			i, j := rng.Intn(len(sc.Steps)+1), rng.Intn(len(other.Steps)+1)
			steps := append(append([]simulate.Step(nil), sc.Steps[:i]...), clone(other).Steps[j:]...)
			if len(steps) > 0 && len(steps) <= maxSteps {
				sc.Steps = steps
				sc.Replicas = max(sc.Replicas, other.Replicas)
			}
		}
	}
	return sc
}

// opWeights weigh the changes: growing a seed (insert, splice) and changing its faults reach new paths more
// often than shrinking it.
var opWeights = [7]int{4, 1, 1, 3, 1, 1, 3}

func pickOp(rng *rand.Rand) int {
	total := 0
	for _, w := range opWeights {
		total += w
	}
	n := rng.Intn(total)
	for op, w := range opWeights {
		if n < w {
			return op
		}
		n -= w
	}
	return 0
}

// changeFault removes a step's faults, or gives it one the generator gives steps of its kind.
func changeFault(rng *rand.Rand, st *simulate.Step) {
	if st.Fault != nil || len(st.Double) > 0 {
		st.Fault, st.Double = nil, nil
		return
	}
	switch st.Op {
	case simulate.OpTurn:
		switch rng.Intn(3) {
		case 0:
			st.Fault = &simulate.Fault{Kind: simulate.FaultCancel, After: 0.05, On: "request"}
			st.Double = []simulate.DoubleFault{{Kind: simulate.DoubleDelay, Delay: 0.03}}
		case 1:
			st.Double = []simulate.DoubleFault{{Kind: simulate.DoubleUnavailable, Times: 1}}
		default:
			st.Double = []simulate.DoubleFault{{Kind: simulate.DoubleDrop, Method: "POST", Times: 1}}
		}
	case simulate.OpPrewarm:
		st.Boxes = 1
		if rng.Intn(4) == 0 {
			st.Fault = &simulate.Fault{Kind: simulate.FaultSupersede}
		} else {
			st.Fault = &simulate.Fault{Kind: simulate.FaultHostLoss}
			st.Double = []simulate.DoubleFault{{Kind: simulate.DoubleHold, Method: "PUT", Times: 1}}
		}
	}
}

// changeReplicas moves the scenario between two and three replicas; steps on a replica that no longer exists
// move to another.
func changeReplicas(rng *rand.Rand, sc *simulate.Scenario) {
	if sc.Replicas == 2 {
		sc.Replicas = 3
		return
	}
	sc.Replicas = 2
	for i := range sc.Steps {
		if sc.Steps[i].Replica == "r3" {
			sc.Steps[i].Replica = simulate.ReplicaName(1 + rng.Intn(2))
		}
	}
}
