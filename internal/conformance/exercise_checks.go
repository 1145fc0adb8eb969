package conformance

import (
	"github.com/astrabox-dev/astrabox/internal/simulate"
)

// The Exercise functions of the checks: each counts, from typed facts of the histories, what its check
// must have seen to decide (the check's Needs).
//
// Only what the checks of several checks_<area>.go files share lives here: an exercise, callback group or
// helper that the checks of one area use lives in that area's checks_<area>.go, beside the check, so a
// new check is one unit (literal, exercise and decision in one file).

// Callback groups the checks of several areas judge.
var (
	judgesPlan    = []simulate.Callback{simulate.CallPlan}
	judgesTurn    = []simulate.Callback{simulate.CallPrepareTurn}
	judgesUAState = []simulate.Callback{simulate.CallReadUserActions, simulate.CallPerformUserAction}
	judgesUA      = []simulate.Callback{simulate.CallPrepareSession, simulate.CallPrepareTurn, simulate.CallReadUserActions, simulate.CallPerformUserAction}
	judgesAll     = simulate.Callbacks()
)

// exUserActions needs a user action raised or returned (or a user-action state, with states set).
func exUserActions(states bool) func(ev *Evidence) Exercise {
	return func(ev *Evidence) Exercise {
		t := newTally(callNoun(judgesUA...))
		met := 0
		for _, cs := range ev.calls(judgesUA...) {
			var labels []string
			if raisedUserAction(cs) != nil {
				labels = append(labels, "raised user actions")
			}
			if st := stateOf(cs); st != nil {
				if _, ok := stateUserAction(st); ok {
					labels = append(labels, "states with a user action")
				} else if states {
					labels = append(labels, "states without a user action")
				}
			}
			if len(labels) > 0 {
				met++
			}
			t.add(cs, labels...)
		}
		if met == 0 && len(ev.overridden(judgesUAState...)) == 0 {
			return Exercise{Tally: t.report(), NotApplicable: "the provider raised no PreparationUserActionRequired and keeps the platform's defaults for read_user_actions and perform_user_action: it has no user action to judge"}
		}
		if met == 0 && !ev.hasPrerequisite() {
			return Exercise{Tally: t.report(), NotApplicable: "the provider never consulted a principal's consent and raised or returned no user action: it has no prerequisite, so no user action to judge"}
		}
		return need{reach: "a principal whose consent is pending (the default suite's consent scenarios) reaches it"}.result(t, met)
	}
}

// providerRequests tells whether any callback of the provider sent a request to the deployment double.
func (ev *Evidence) providerRequests() bool {
	for _, h := range ev.Histories {
		for _, r := range h.Requests {
			if r.Call != "" || r.Callback != "" {
				return true
			}
		}
	}
	return false
}

// hasPrerequisite tells whether the provider showed a prerequisite in any history: it consulted a principal's
// consent, or raised or returned a user action.
func (ev *Evidence) hasPrerequisite() bool {
	for _, h := range ev.Histories {
		if len(prerequisitePrincipals(h)) > 0 {
			return true
		}
	}
	return false
}

// exAnyCall needs any call of a callback the provider defines.
var exAnyCall = needCalls(need{reach: "any scenario that calls a callback the provider defines reaches it"})
