package simulate

import (
	"slices"
	"strings"

	"github.com/astrabox-dev/astrabox/internal/harness"
)

// Callback names one of the seven provider callbacks the platform calls. Checks name callbacks with these
// constants, never with string literals, so that a misspelt name does not compile.
type Callback string

// The provider callbacks, as the harness and CallRecord.Method name them.
const (
	CallPlan              Callback = "plan"
	CallSynchronize       Callback = "synchronize"
	CallRecover           Callback = "recover"
	CallPrepareSession    Callback = "prepare_session"
	CallPrepareTurn       Callback = "prepare_turn"
	CallReadUserActions   Callback = "read_user_actions"
	CallPerformUserAction Callback = "perform_user_action"
)

// Callbacks lists every callback in the order the contract presents them.
func Callbacks() []Callback {
	return []Callback{CallPlan, CallSynchronize, CallRecover, CallPrepareSession, CallPrepareTurn, CallReadUserActions, CallPerformUserAction}
}

// Known tells whether c is one of the seven callbacks.
func (c Callback) Known() bool {
	for _, k := range Callbacks() {
		if k == c {
			return true
		}
	}
	return false
}

// String is the callback's name.
func (c Callback) String() string { return string(c) }

// Is tells whether the record is a call of callback cb.
func (c *CallRecord) Is(cb Callback) bool { return c != nil && Callback(c.Method) == cb }

// ResultKind is the kind of value a callback returned (harness.Result.Type).
type ResultKind = harness.ResultKind

// The result kinds the harness reports.
const (
	KindPlan            = harness.KindPlan
	KindMaterials       = harness.KindMaterials
	KindUserActionState = harness.KindUserActionState
	KindBool            = harness.KindBool
	KindNone            = harness.KindNone
	KindCoroutine       = harness.KindCoroutine
	KindOther           = harness.KindOther
)

// ResultKinds lists every result kind.
func ResultKinds() []ResultKind { return harness.ResultKinds() }

// Outcomes lists every call outcome.
func Outcomes() []Outcome {
	return []Outcome{OutcomeReturned, OutcomeRaised, OutcomeCancelled, OutcomeOverran, OutcomeHostLoss, OutcomeDied}
}

// Returned tells whether the call returned normally with a value of kind k.
func (c *CallRecord) Returned(k ResultKind) bool {
	return c != nil && c.Outcome == OutcomeReturned && k.Of(c.Result)
}

// faultKinds lists the kinds of fault a step injects: its callback fault, then its double faults.
func (st *Step) faultKinds() []string {
	var out []string
	if st.Fault != nil {
		out = append(out, st.Fault.Kind)
	}
	for _, d := range st.Double {
		out = append(out, "double:"+d.Kind)
	}
	return out
}

// startingConsent is the consent state each principal of a scenario starts with, sorted by name.
func startingConsent(sc *Scenario) []ConsentState {
	out := make([]ConsentState, 0, len(sc.Principals))
	for name, p := range sc.Principals {
		c := p.Consent
		if c == "" {
			c = ConsentGranted
		}
		out = append(out, ConsentState{Principal: name, Consent: c, OnCheck: p.ConsentOnCheck})
	}
	slices.SortFunc(out, func(a, b ConsentState) int { return strings.Compare(a.Principal, b.Principal) })
	return out
}
