package conformance

import (
	"strings"
	"testing"

	"github.com/astrabox-dev/astrabox/internal/harness"
	"github.com/astrabox-dev/astrabox/internal/report"
	"github.com/astrabox-dev/astrabox/internal/secrets"
	"github.com/astrabox-dev/astrabox/internal/simulate"
)

// TestEveryCheckDeclaresItsExercise: every check a run decides says what it must have seen and measures it.
func TestEveryCheckDeclaresItsExercise(t *testing.T) {
	for _, c := range Checks() {
		if c.Elsewhere != "" {
			continue
		}
		if c.Needs == "" || c.Exercise == nil {
			t.Errorf("%s declares no requirement (Needs %q, Exercise set %v)", c.ID, c.Needs, c.Exercise != nil)
		}
		if !c.Static && len(c.Judges) == 0 {
			t.Errorf("%s judges no callback: it can never be not_applicable", c.ID)
		}
		for _, cb := range c.Judges {
			if !cb.Known() {
				t.Errorf("%s judges unknown callback %q", c.ID, cb)
			}
		}
	}
}

// overridesOnly is loading information for a provider that defines exactly the given callbacks.
func overridesOnly(cbs ...simulate.Callback) *harness.LoadInfo {
	info := &harness.LoadInfo{IsClass: true, IsSubclass: true, Instantiated: true, Qualname: "P", Methods: map[string]harness.MethodInfo{}}
	for _, c := range simulate.Callbacks() {
		info.Methods[string(c)] = harness.MethodInfo{Overridden: false}
	}
	for _, c := range cbs {
		info.Methods[string(c)] = harness.MethodInfo{Overridden: true, File: "/p/provider.py", Line: 10}
	}
	return info
}

func resultOf(t *testing.T, rs []report.Result, id string) report.Result {
	t.Helper()
	for _, r := range rs {
		if r.Check == id {
			return r
		}
	}
	t.Fatalf("no result for %s", id)
	return report.Result{}
}

// TestJudgeStatuses walks the judge's order: a provider keeping the default is not_applicable, a path it
// implements but no scenario reached is not_exercised (never passed), a reached one passes with what it was
// decided over, a skip with a reason wins over not_exercised, and a failure wins over everything reached.
func TestJudgeStatuses(t *testing.T) {
	b := newHist("turns")
	b.h.Events = append(b.h.Events, &simulate.Event{Kind: simulate.EventStep, Step: 1, Message: "turn"})
	turnOK := b.call(&simulate.CallRecord{Replica: "r1", Method: "prepare_turn", Outcome: simulate.OutcomeReturned,
		Ctx: simulate.CallContext{Session: "s1", Attempt: "a1"}, Result: &harness.Result{Type: simulate.KindMaterials}})
	b.h.Events[len(b.h.Events)-1].Step = 1
	_ = turnOK
	ev := &Evidence{Histories: []*simulate.History{b.h}, Secrets: &secrets.Set{}, Load: overridesOnly(simulate.CallPrepareTurn), Skipped: map[string]string{}}
	rs := Verdicts{}.Judge(ev)

	if r := resultOf(t, rs, "RECOVER-TRUTH"); r.Status != report.StatusNotApplicable || !strings.Contains(r.Message, "default recover") {
		t.Errorf("RECOVER-TRUTH = %s %q", r.Status, r.Message)
	}
	if r := resultOf(t, rs, "TURN-WITHIN-DEADLINE"); r.Status != report.StatusPassed || !strings.Contains(r.DecidedOver, "1 prepare_turn calls in 1 scenario: 1 fault-free") {
		t.Errorf("TURN-WITHIN-DEADLINE = %s over %q", r.Status, r.DecidedOver)
	}
	r := resultOf(t, rs, "TURN-IDEMPOTENT")
	if r.Status != report.StatusNotExercised || !strings.Contains(r.Message, "a retry of an attempt that already had material") || !strings.Contains(r.Message, "retry step") {
		t.Errorf("TURN-IDEMPOTENT = %s %q", r.Status, r.Message)
	}
	// A reasoned skip in the project's settings decides it instead.
	rs = Verdicts{Skipped: map[string]string{"TURN-IDEMPOTENT": "attempts are single-shot here"}, SkipFile: "/p/pyproject.toml"}.Judge(ev)
	if r := resultOf(t, rs, "TURN-IDEMPOTENT"); r.Status != report.StatusSkipped || r.Message != "skipped by pyproject.toml: attempts are single-shot here" {
		t.Errorf("skipped TURN-IDEMPOTENT = %s %q", r.Status, r.Message)
	}
	// A failure stands whatever else was exercised.
	slow := b.call(&simulate.CallRecord{Replica: "r1", Method: "prepare_turn", Outcome: simulate.OutcomeCancelled, CancelSent: true, DeadlineS: 1,
		Ctx: simulate.CallContext{Session: "s1", Attempt: "a2"}})
	_ = slow
	rs = Verdicts{}.Judge(ev)
	if r := resultOf(t, rs, "TURN-WITHIN-DEADLINE"); r.Status != report.StatusFailed || r.DecidedOver == "" {
		t.Errorf("TURN-WITHIN-DEADLINE after a fault-free cancel = %s over %q", r.Status, r.DecidedOver)
	}
}

// TestOneJudge: Failing (exploration, simulate) and Decide (conformance run) agree on which checks fail,
// because both go through Verdicts.
func TestOneJudge(t *testing.T) {
	b := newHist("x")
	b.call(&simulate.CallRecord{Replica: "r1", Method: "prepare_session", Outcome: simulate.OutcomeDied, ProcessKind: string(harness.KindProtocol)})
	b.call(&simulate.CallRecord{Replica: "r1", Method: "prepare_turn", Outcome: simulate.OutcomeCancelled, CancelSent: true})
	ev := &Evidence{Histories: []*simulate.History{b.h}, Secrets: &secrets.Set{}, Load: overridesOnly(simulate.CallPrepareSession, simulate.CallPrepareTurn), Skipped: map[string]string{}}
	ids, _ := Failing(ev, nil, nil, nil)
	var judged []string
	for _, r := range (Verdicts{}).Judge(ev) {
		if r.Status == report.StatusFailed {
			judged = append(judged, r.Check)
		}
	}
	if strings.Join(ids, ",") != strings.Join(judged, ",") || !contains(ids, "GEN-SETTLES") || !contains(ids, "TURN-WITHIN-DEADLINE") {
		t.Fatalf("Failing = %v, the judge = %v", ids, judged)
	}
	if ids, _ := Failing(ev, nil, nil, map[string]string{"GEN-SETTLES": "known"}); contains(ids, "GEN-SETTLES") {
		t.Fatalf("a skipped check failed: %v", ids)
	}
}
