package conformance

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/astrabox-dev/astrabox/internal/report"
	"github.com/astrabox-dev/astrabox/internal/simulate"
)

// Exercise is what a check saw of what it judges: whether its requirement was met (a result may only pass
// when it was), what the decision was made over, and otherwise what was missing and what would reach it.
type Exercise struct {
	// Met says the check saw what it must have seen to decide.
	Met bool
	// Tally is what the decision was made over when the check counted calls ("14 prepare_turn calls in 3
	// scenarios: 2 refreshes, ..."); Over is the sentence of a check that counts something else.
	Tally *report.Tally
	Over  string
	// Missing, when Met is false, says what was not seen and what kind of scenario would reach it.
	Missing string
	// NotApplicable, when set, says why the clause does not concern this provider at all (it keeps the
	// platform's default for what the check judges, or its answers rule the path out).
	NotApplicable string
}

// tally counts the calls a check decided over, by scenario, with named sub-counts.
type tally struct {
	noun      string
	calls     int
	scenarios map[string]bool
	counts    map[string]int
	order     []string
}

func newTally(noun string) *tally {
	return &tally{noun: noun, scenarios: map[string]bool{}, counts: map[string]int{}}
}

// add counts one call, and one of each label.
func (t *tally) add(cs callSite, labels ...string) {
	t.calls++
	t.scenarios[cs.h.Scenario] = true
	t.mark(labels...)
}

// mark counts labels without counting a call.
func (t *tally) mark(labels ...string) {
	for _, l := range labels {
		t.count(l, 1)
	}
}

// count adds n to a label's count without counting a call.
func (t *tally) count(label string, n int) {
	if label == "" || n == 0 {
		return
	}
	if _, ok := t.counts[label]; !ok {
		t.order = append(t.order, label)
	}
	t.counts[label] += n
}

// report is the tally as the report carries it (report.Tally), which merged shards add up.
func (t *tally) report() *report.Tally {
	out := &report.Tally{Noun: t.noun, Calls: t.calls, Scenarios: len(t.scenarios)}
	for _, l := range t.order {
		out.Counts = append(out.Counts, report.Count{Label: l, N: t.counts[l]})
	}
	return out
}

// String is the decided-over sentence: "N <noun> in M scenarios: a x, b y" (report.Tally.Sentence).
func (t *tally) String() string { return t.report().Sentence() }

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// callNoun names the calls of some callbacks ("prepare_turn calls", "calls of plan and synchronize",
// "callbacks").
func callNoun(cbs ...simulate.Callback) string {
	switch len(cbs) {
	case 0:
		return "callbacks"
	case 1:
		return string(cbs[0]) + " calls"
	}
	var names []string
	for _, c := range cbs {
		names = append(names, string(c))
	}
	return "calls of " + strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// need is a requirement counted over calls: the check is exercised once min calls of the given callbacks
// meet it.
type need struct {
	// reach says what kind of scenario would reach the requirement (the check's Needs).
	reach string
	// calls are the callbacks counted (none: every callback the provider overrides).
	calls []simulate.Callback
	// met tells whether a call meets the requirement (nil: every counted call does).
	met func(ev *Evidence, cs callSite) bool
	// label names the kind of met call, for the sub-counts ("" for none).
	label string
	// also adds other sub-counts for a call.
	also func(ev *Evidence, cs callSite) []string
	// min is how many met calls are needed (0 means 1).
	min int
}

// exercise counts the evidence against the requirement.
func (n need) exercise(ev *Evidence) Exercise {
	t := newTally(callNoun(n.calls...))
	met := 0
	for _, cs := range ev.calls(n.calls...) {
		if len(n.calls) == 0 && !providerOverrides(ev, cs.c.Method) {
			continue
		}
		var labels []string
		ok := n.met == nil || n.met(ev, cs)
		if ok {
			met++
			labels = append(labels, n.label)
		}
		if n.also != nil {
			labels = append(labels, n.also(ev, cs)...)
		}
		t.add(cs, labels...)
	}
	return n.result(t, met)
}

// result turns a tally and the number of met instances into an Exercise.
func (n need) result(t *tally, met int) Exercise {
	want := max(n.min, 1)
	if met >= want {
		return Exercise{Met: true, Tally: t.report()}
	}
	seen := "none was seen"
	if met > 0 {
		seen = fmt.Sprintf("only %d was seen", met)
	}
	if want > 1 {
		seen = fmt.Sprintf("it needs %d and %s", want, seen)
	}
	return Exercise{Tally: t.report(), Missing: fmt.Sprintf("%s in %s; %s", seen, t.String(), n.reach)}
}

// needCalls is a check's Exercise function over calls.
func needCalls(n need) func(ev *Evidence) Exercise { return n.exercise }

// faultFree tells whether a call ran in a step that injected no fault, without a fault of its own, with its
// principal's consent granted (or no principal involved).
func (ev *Evidence) faultFree(cs callSite) bool {
	if cs.c.Fault != "" {
		return false
	}
	if st := stepEvent(cs.h, cs.e.Step); st != nil && len(st.Faults) > 0 {
		return false
	}
	if p := cs.c.Ctx.Principal; p != "" {
		return consentAt(cs.h, cs.e, p) == simulate.ConsentGranted
	}
	return true
}

// stepEvent is the step event of a step number, or nil.
func stepEvent(h *simulate.History, step int) *simulate.Event {
	for _, e := range h.Events {
		if e.Kind == simulate.EventStep && e.Step == step {
			return e
		}
	}
	return nil
}

// consentAt is a principal's consent state at the identity service when an event happened, from the typed
// facts of the history: its starting state, set_consent changes and consent checks that moved it. Unknown
// principals (not in the scenario) are granted, as the double treats them.
func consentAt(h *simulate.History, at *simulate.Event, principal string) string {
	state, onCheck := simulate.ConsentGranted, ""
	for _, p := range h.Principals {
		if p.Principal == principal {
			state, onCheck = p.Consent, p.OnCheck
		}
	}
	for _, e := range h.Events {
		if e == at {
			break
		}
		if e.Consent != nil && e.Consent.Principal == principal {
			state = e.Consent.Consent
		}
		if e.Call != nil && onCheck != "" && checkedConsent(h, e.Call, principal) {
			state, onCheck = onCheck, ""
		}
	}
	return state
}

// checkedConsent tells whether a call made a successful consent check for a principal at the double.
func checkedConsent(h *simulate.History, c *simulate.CallRecord, principal string) bool {
	for _, r := range h.RequestsOf(c.Key) {
		if strings.ToUpper(r.Method) == "POST" && r.Status == 200 && r.Path == "/v1/consents/"+principal+"/check" {
			return true
		}
	}
	return false
}

// overridden lists which of the callbacks the provider defines itself (all of them when unknown).
func (ev *Evidence) overridden(cbs ...simulate.Callback) []simulate.Callback {
	var out []simulate.Callback
	for _, c := range cbs {
		if providerOverrides(ev, c) {
			out = append(out, c)
		}
	}
	return out
}

// keepsDefaults is the not-applicable reason for a check that judges only callbacks the provider does not
// define, or "".
func (ev *Evidence) keepsDefaults(judges []simulate.Callback) string {
	if len(judges) == 0 || len(ev.overridden(judges...)) > 0 {
		return ""
	}
	var names []string
	for _, c := range judges {
		names = append(names, string(c))
	}
	if len(names) == 1 {
		return "the provider keeps the platform's default " + names[0] + ", so there is nothing of its own to judge"
	}
	return "the provider keeps the platform's defaults for " + strings.Join(names, ", ") + ", so there is nothing of its own to judge"
}

// sortedIntKeys returns the keys of a map of counts, sorted.
func sortedIntKeys(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// replicasOf lists the distinct replicas of some calls, sorted.
func replicasOf(css []callSite) []string {
	var out []string
	for _, cs := range css {
		if !slices.Contains(out, cs.c.Replica) {
			out = append(out, cs.c.Replica)
		}
	}
	sort.Strings(out)
	return out
}

// relPath is a path relative to the project when it lies inside it.
func relPath(p, project string) string {
	if l := relLocation(&report.Location{Path: p}, project); l != nil {
		return l.Path
	}
	return p
}
