package explore

import (
	"math/rand"
	"slices"
	"strconv"
	"strings"

	"github.com/astrabox-dev/astrabox/internal/simulate"
)

// maxSteps bounds a varied scenario: insertions and splices never grow one past it.
const maxSteps = 30

// mutate varies base with one to three changes: insert a step the generator could take at that point, delete
// one, swap two neighbours, change a step's faults or replica, change the number of replicas, splice base
// with another seed, or change who a step concerns (a Session's principal, a consent change's principal or
// state). The result may break the platform's order rules; the caller validates it.
//
// at is the step (1-based) at which base reached the last platform state no earlier scenario had (0 for
// none): as AFLNet mutates the messages after the state it targets, an insertion goes right after it a third
// of the time, at the end a third, anywhere the rest. boost multiplies the weights of the inserted steps' ops
// (aim), and with novel an inserted step prefers a situation of the platform outside it (novelty.go).
func mutate(rng *rand.Rand, base *simulate.Scenario, at int, seeds []*simulate.Scenario, boost map[string]int, novel map[string]bool) *simulate.Scenario {
	sc := clone(base)
	for n := 1 + rng.Intn(3); n > 0; n-- {
		switch pickOp(rng) {
		case 0:
			if len(sc.Steps) < maxSteps {
				i := insertAt(rng, min(at, len(sc.Steps)), len(sc.Steps))
				sc.Steps = slices.Insert(sc.Steps, i, stepAt(rng, sc, i, boost, novel))
				if i < at {
					at++
				}
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
				st.Replica = simulate.ReplicaName(1 + rng.Intn(max(1, sc.Replicas)))
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
		case 7:
			changeWho(rng, &sc.Steps[rng.Intn(len(sc.Steps))])
		}
	}
	return sc
}

// stepAt returns a step the generator could take after the first i steps of sc: its state (Sessions,
// attempts, operations, held writes) is rebuilt from those steps, and a new Session or attempt gets a name
// no step of sc uses.
func stepAt(rng *rand.Rand, sc *simulate.Scenario, i int, boost map[string]int, novel map[string]bool) simulate.Step {
	g := &gen{rng: rng, replicas: max(1, sc.Replicas), attempts: map[string][]string{}, boost: boost}
	if novel != nil {
		g.seek(newModel(sc.Replicas, sc.Principals), novel)
	}
	for _, st := range sc.Steps[:i] {
		g.track(st)
		if g.novelty != nil {
			g.novelty.took(st)
		}
	}
	for _, st := range sc.Steps {
		g.nSession = max(g.nSession, numbered(st.Session, "s"))
		g.nAttempt = max(g.nAttempt, numbered(st.Attempt, "t"))
	}
	g.step()
	return g.steps[len(g.steps)-1]
}

// insertAt is where an insertion into n steps goes: right after step at (1-based; anywhere when at is 0),
// at the end, or anywhere, a third of the time each.
func insertAt(rng *rand.Rand, at, n int) int {
	switch rng.Intn(3) {
	case 0:
		if at > 0 {
			return at
		}
	case 1:
		return n
	}
	return rng.Intn(n + 1)
}

// numbered is the number of a generated name such as s3 or t12 (0 for any other name).
func numbered(name, prefix string) int {
	n, err := strconv.Atoi(strings.TrimPrefix(name, prefix))
	if err != nil || !strings.HasPrefix(name, prefix) {
		return 0
	}
	return n
}

// changeWho gives a Session start another principal, or a consent change another principal or state.
func changeWho(rng *rand.Rand, st *simulate.Step) {
	other := func(p string) string {
		for {
			if q := principals[rng.Intn(len(principals))]; q != p {
				return q
			}
		}
	}
	switch st.Op {
	case simulate.OpClaim, simulate.OpColdStart:
		st.Principal = other(st.Principal)
	case simulate.OpSetConsent:
		if rng.Intn(2) == 0 {
			st.Principal = other(st.Principal)
		} else if st.Consent == "pending" {
			st.Consent = "granted"
		} else {
			st.Consent = "pending"
		}
	}
}

// opWeights weigh the changes: growing a seed (insert, splice) and changing its faults reach new paths more
// often than shrinking it.
var opWeights = [8]int{4, 1, 1, 3, 1, 1, 3, 2}

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
			// The cancel is the request's: its fallback deadline is the generator's generous one (simulate's
			// ops_turn.go), since at 0.05 s a loaded machine's cancel could overtake the request, and even the
			// provider's first step, and what a broken provider is found to do would depend on the load.
			st.Fault = &simulate.Fault{Kind: simulate.FaultCancel, After: 2, On: "request"}
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
