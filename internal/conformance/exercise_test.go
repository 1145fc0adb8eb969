package conformance

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/astrabox-dev/astrabox/internal/harness"
	"github.com/astrabox-dev/astrabox/internal/secrets"
	"github.com/astrabox-dev/astrabox/internal/simulate"
)

func exEvidence(h *simulate.History, cbs ...simulate.Callback) *Evidence {
	return &Evidence{Histories: []*simulate.History{h}, Secrets: &secrets.Set{}, Load: overridesOnly(cbs...), Skipped: map[string]string{}}
}

// TestExerciseFromTheProvidersAnswers: a path the provider's own answers rule out is not applicable; a path
// they open but no scenario reached is not exercised, with what would reach it.
func TestExerciseFromTheProvidersAnswers(t *testing.T) {
	turn := func(validity string, refresh bool) *simulate.CallRecord {
		return &simulate.CallRecord{Replica: "r1", Method: "prepare_turn", Outcome: simulate.OutcomeReturned, Ctx: simulate.CallContext{Session: "s1", Attempt: "a1", Refresh: refresh},
			Result: &harness.Result{Type: simulate.KindMaterials, TurnValiditySeconds: json.RawMessage(validity)}}
	}
	b := newHist("x")
	b.call(turn("null", false))
	if ex := exRefresh(exEvidence(b.h, simulate.CallPrepareTurn)); ex.NotApplicable == "" || ex.Met {
		t.Errorf("no validity: %+v", ex)
	}
	b = newHist("x")
	b.call(turn("3600", false))
	ex := exRefresh(exEvidence(b.h, simulate.CallPrepareTurn))
	if ex.Met || ex.NotApplicable != "" || !strings.Contains(ex.Missing, "3600s") {
		t.Errorf("an hour's validity never refreshed: %+v", ex)
	}
	b.call(turn("3600", true))
	if ex := exRefresh(exEvidence(b.h, simulate.CallPrepareTurn)); !ex.Met || !strings.Contains(ex.Tally.Sentence(), "1 refreshes") {
		t.Errorf("a refresh seen: %+v", ex)
	}

	// User actions: nothing offered is not applicable; an offered operation never performed is not exercised.
	b = newHist("x")
	b.call(&simulate.CallRecord{Replica: "r1", Method: "read_user_actions", Outcome: simulate.OutcomeReturned, Ctx: simulate.CallContext{Session: "s1"},
		Result: &harness.Result{Type: simulate.KindUserActionState, Ready: true}})
	if ex := exUAIdempotent(exEvidence(b.h, simulate.CallReadUserActions, simulate.CallPerformUserAction)); ex.NotApplicable == "" {
		t.Errorf("nothing offered: %+v", ex)
	}
	b.call(&simulate.CallRecord{Replica: "r1", Method: "read_user_actions", Outcome: simulate.OutcomeReturned, Ctx: simulate.CallContext{Session: "s1"}, Result: pendingState()})
	if ex := exUAIdempotent(exEvidence(b.h, simulate.CallReadUserActions, simulate.CallPerformUserAction)); ex.Met || ex.NotApplicable != "" || !strings.Contains(ex.Missing, "check-consent 1 time") {
		t.Errorf("offered, never performed: %+v", ex)
	}

	// Cancellation and error paths: without a request to the deployment there is nothing to leave behind.
	b = newHist("x")
	b.call(&simulate.CallRecord{Replica: "r1", Method: "prepare_session", Outcome: simulate.OutcomeReturned, Result: &harness.Result{Type: simulate.KindMaterials}})
	if ex := exCancelled(exEvidence(b.h, simulate.CallPrepareSession)); ex.NotApplicable == "" {
		t.Errorf("no requests, nothing cancelled: %+v", ex)
	}
	c := b.call(&simulate.CallRecord{Replica: "r1", Method: "prepare_session", Outcome: simulate.OutcomeReturned, Result: &harness.Result{Type: simulate.KindMaterials}})
	b.request(simulate.Request{Replica: "r1", Call: c.Key, Method: "POST", Path: "/v1/credentials", Status: 201})
	if ex := exCancelled(exEvidence(b.h, simulate.CallPrepareSession)); ex.Met || ex.NotApplicable != "" {
		t.Errorf("requests but nothing cancelled must be not exercised: %+v", ex)
	}
	if ex := exRaised(exEvidence(b.h, simulate.CallPrepareSession)); ex.Met || ex.NotApplicable != "" {
		t.Errorf("requests but nothing raised must be not exercised: %+v", ex)
	}
}

// TestFaultFreeUsesTypedFacts: a call is fault-free only when neither it nor its step injected a fault and
// its principal's consent was granted at that moment (set_consent changes and consent checks included).
func TestFaultFreeUsesTypedFacts(t *testing.T) {
	b := newHist("x")
	b.h.Principals = []simulate.ConsentState{{Principal: "dave", Consent: simulate.ConsentPending, OnCheck: simulate.ConsentGranted}}
	step := func(n int, faults ...string) {
		b.h.Events = append(b.h.Events, &simulate.Event{Kind: simulate.EventStep, Step: n, Faults: faults})
	}
	call := func(n int, principal string) callSite {
		c := b.call(&simulate.CallRecord{Replica: "r1", Method: "prepare_turn", Outcome: simulate.OutcomeReturned, Ctx: simulate.CallContext{Principal: principal}})
		e := b.h.Events[len(b.h.Events)-1]
		e.Step = n
		return callSite{h: b.h, c: c, e: e}
	}
	ev := exEvidence(b.h, simulate.CallPrepareTurn)
	step(1)
	pending := call(1, "dave")
	step(2, "double:unavailable")
	faulted := call(2, "alice")
	step(3)
	check := call(3, "dave")
	b.request(simulate.Request{Replica: "r1", Call: check.c.Key, Method: "POST", Path: "/v1/consents/dave/check", Status: 200})
	step(4)
	after := call(4, "dave")
	b.h.Events = append(b.h.Events, &simulate.Event{Kind: simulate.EventPlatform, Consent: &simulate.ConsentState{Principal: "dave", Consent: simulate.ConsentPending}})
	step(5)
	again := call(5, "dave")
	for _, tc := range []struct {
		name string
		cs   callSite
		want bool
	}{{"pending at start", pending, false}, {"double fault", faulted, false}, {"granted after a check", after, true}, {"pending after set_consent", again, false}} {
		if got := ev.faultFree(tc.cs); got != tc.want {
			t.Errorf("%s: faultFree = %v", tc.name, got)
		}
	}
}
