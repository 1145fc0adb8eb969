package explore

import (
	"slices"

	"github.com/astrabox-dev/astrabox/internal/simulate"
)

// aimFactor multiplies the generator's weight of an op that makes the platform call a callback the
// provider implements and no scenario has called yet.
const aimFactor = 4

// aimAfter is how many scenarios are observed before aiming starts: the first ones show what the
// generator reaches unaided (and are the same as blind exploration's).
const aimAfter = 2 * window

// callbackOps are, per callback, the generated steps that make the platform call it (plan is left out: every
// replica plans on its first step), from each op's spec (opTables). TestEveryCallbackHasItsOps checks every
// callback has some.
var callbackOps = ops.callbackOps

// aim directs generation at the callbacks the provider implements that no observed scenario has called
// (AFLGo's idea, with callbacks for target sites): while there are any, fresh scenarios and inserted steps
// draw the steps that call them aimFactor times as often. A callback that needs more than its step (an
// offered user action needs a Session whose owner's consent is pending) is reached by more tries of that
// step; the platform's refusals of it are platform states (stateFeatures) the corpus keeps.
type aim struct {
	implemented []simulate.Callback
	seen        map[simulate.Callback]bool
	observed    int
}

func newAim(implemented []simulate.Callback) aim {
	return aim{implemented: implemented, seen: map[simulate.Callback]bool{}}
}

// called takes an observed history's callbacks.
func (a *aim) called(h *simulate.History) {
	a.observed++
	if a.seen == nil {
		a.seen = map[simulate.Callback]bool{}
	}
	for _, cb := range callsIn(h) {
		a.seen[cb] = true
	}
}

// unreached are the implemented callbacks no observed scenario called.
func (a *aim) unreached() []simulate.Callback {
	var out []simulate.Callback
	for _, cb := range a.implemented {
		if !a.seen[cb] {
			out = append(out, cb)
		}
	}
	return out
}

// boost is the generator's weight factor per op now (nil: the generator's own weights).
func (a *aim) boost() map[string]int {
	if a.observed < aimAfter {
		return nil
	}
	var out map[string]int
	for _, cb := range a.unreached() {
		for _, op := range callbackOps[cb] {
			if out == nil {
				out = map[string]int{}
			}
			out[op] = aimFactor
		}
	}
	return out
}

// boostedOps lists the ops a boost raises, sorted (for logs and tests).
func boostedOps(b map[string]int) []string {
	var out []string
	for op := range b {
		out = append(out, op)
	}
	slices.Sort(out)
	return out
}
