package conformance

import (
	"strings"
	"testing"

	"github.com/astrabox-dev/astrabox/internal/simulate"
)

// serviceHeld starts a history whose scenario seeds each principal's consent at the declared service svc as
// well as at the double (what the simulator records when svc declares consent).
func serviceHeld(svc string, start map[string]string) *histBuilder {
	b := newHist("user-actions")
	b.h.Prerequisites = []simulate.ServicePrerequisite{{Service: svc, Prerequisite: simulate.PrerequisiteConsent}}
	for _, p := range []string{"alice", "bob", "dave"} {
		if s, ok := start[p]; ok {
			b.h.Principals = append(b.h.Principals, simulate.ConsentState{Principal: p, Consent: s, Services: []string{svc}})
		}
	}
	return b
}

// serviceConsent records a set_consent that the simulator also sent to svc.
func (b *histBuilder) serviceConsent(svc, principal, state string) {
	b.h.Events = append(b.h.Events, &simulate.Event{Kind: simulate.EventPlatform, Message: "consent of " + principal + " is now " + state,
		Consent: &simulate.ConsentState{Principal: principal, Consent: state, Services: []string{svc}}})
}

// TestUAAuthorityJudgesConsentHeldByTheProvidersOwnService: when a declared service holds consent, the
// provider has the prerequisite for every principal the suite moved there, although it never asked the
// double nor raised a user action; a turn let through while the service says pending fails and the evidence
// names the service; a refused one, or one after the service says granted again, does not.
func TestUAAuthorityJudgesConsentHeldByTheProvidersOwnService(t *testing.T) {
	b := serviceHeld("consent-store", map[string]string{"alice": simulate.ConsentGranted, "bob": simulate.ConsentPending})
	b.call(turn("r1", "s-alice", "alice", false, true)) // granted: fine
	b.call(turn("r2", "s-bob", "bob", false, false))    // pending, refused: right
	b.serviceConsent("consent-store", "alice", simulate.ConsentPending)
	breach := b.call(turn("r1", "s-alice", "alice", false, true)) // pending at the service, let through
	b.serviceConsent("consent-store", "alice", simulate.ConsentGranted)
	b.call(turn("r2", "s-alice", "alice", false, true)) // granted again: fine
	ev := evidenceOf(b.h)
	fs := decideUAAuthority(ev)
	if len(fs) != 1 || !strings.Contains(fs[0].Message, "let 1 turn(s) through") {
		t.Fatalf("findings = %+v", fs)
	}
	want := "prepare_turn for session s-alice (attempt , without a prior state read) returned materials although service consent-store held consent pending for principal alice"
	if len(fs[0].Evidence) != 1 || !strings.Contains(fs[0].Evidence[0].Text, want) || fs[0].Evidence[0].Replica+"#"+fs[0].Evidence[0].CallID != breach.Key {
		t.Errorf("evidence = %+v, want %q on %s", fs[0].Evidence, want, breach.Key)
	}
	if x := exUAAuthority(ev); x.NotApplicable != "" {
		t.Errorf("UA-AUTHORITY not applicable with a service holding consent: %+v", x)
	}
}

// TestUAAuthorityWithoutTheServiceDeclarationIsNotApplicable is the contrast: the same turns, with the
// consent only at the double that this provider never asks, concern no prerequisite of the provider's.
func TestUAAuthorityWithoutTheServiceDeclarationIsNotApplicable(t *testing.T) {
	b := newHist("user-actions")
	b.h.Principals = []simulate.ConsentState{{Principal: "alice", Consent: simulate.ConsentGranted}}
	b.consent("alice", simulate.ConsentPending)
	b.call(turn("r1", "s-alice", "alice", false, true))
	ev := evidenceOf(b.h)
	if fs := decideUAAuthority(ev); len(fs) != 0 {
		t.Fatalf("findings = %+v", fs)
	}
	if x := exUAAuthority(ev); x.NotApplicable == "" {
		t.Errorf("UA-AUTHORITY applicable without any prerequisite: %+v", x)
	}
}

// TestUAAuthorityServiceConsentIgnoresTheDoublesCheck: a consent check at the double that grants there (the
// scenario's consent_on_check) does not move the service's state; a turn let through while the service still
// says pending fails, named by the service.
func TestUAAuthorityServiceConsentIgnoresTheDoublesCheck(t *testing.T) {
	b := serviceHeld("consent-store", map[string]string{"dave": simulate.ConsentPending})
	b.h.Principals[0].OnCheck = simulate.ConsentGranted
	perform := b.call(&simulate.CallRecord{Replica: "r1", Method: "perform_user_action", Ctx: simulate.CallContext{Session: "s-dave", Principal: "dave"},
		Outcome: simulate.OutcomeReturned, Result: pendingState()})
	b.request(simulate.Request{Replica: "r1", Call: perform.Key, Method: "POST", Path: "/v1/consents/dave/check", Status: 200, Applied: true, ApplyOrder: 1})
	b.call(turn("r1", "s-dave", "dave", true, true))
	fs := decideUAAuthority(evidenceOf(b.h))
	if len(fs) != 1 || !strings.Contains(fs[0].Evidence[0].Text, "service consent-store held consent pending for principal dave") {
		t.Fatalf("findings = %+v", fs)
	}
}

// TestUAIdempotentCountsServiceConsentChanges: a set_consent at the provider's own service starts a new
// pending requirement for UA-IDEMPOTENT as one at the double does, so performing again after a revocation
// is not blamed as a second write for the same requirement.
func TestUAIdempotentCountsServiceConsentChanges(t *testing.T) {
	b := serviceHeld("consent-store", map[string]string{"dave": simulate.ConsentGranted})
	b.serviceConsent("consent-store", "dave", simulate.ConsentPending)
	read := func(replica string) {
		b.call(&simulate.CallRecord{Replica: replica, Method: "read_user_actions", Ctx: simulate.CallContext{Session: "s-dave", Principal: "dave"},
			Outcome: simulate.OutcomeReturned, Result: pendingState()})
	}
	perform := func(replica string) *simulate.CallRecord {
		return b.call(&simulate.CallRecord{Replica: replica, Method: "perform_user_action", Args: map[string]any{"action_id": "check-consent"},
			Ctx: simulate.CallContext{Session: "s-dave", Principal: "dave"}, Outcome: simulate.OutcomeReturned, Result: pendingState()})
	}
	read("r1")
	first := perform("r1")
	b.request(simulate.Request{Replica: "r1", Call: first.Key, Service: "consent-store", Method: "POST", Path: "/v2/consent-requests/dave", Status: 201, Applied: true, ApplyOrder: 1})
	b.serviceConsent("consent-store", "dave", simulate.ConsentGranted)
	b.serviceConsent("consent-store", "dave", simulate.ConsentPending)
	read("r2")
	again := perform("r2")
	b.request(simulate.Request{Replica: "r2", Call: again.Key, Service: "consent-store", Method: "POST", Path: "/v2/consent-requests/dave/2", Status: 201, Applied: true, ApplyOrder: 2})
	if fs := decideUAIdempotent(evidenceOf(b.h)); len(fs) != 0 {
		t.Fatalf("a new requirement at the service was judged as the same one: %+v", fs)
	}
	// Without the change in between, the second call's new write is blamed.
	b = serviceHeld("consent-store", map[string]string{"dave": simulate.ConsentPending})
	read("r1")
	first = perform("r1")
	b.request(simulate.Request{Replica: "r1", Call: first.Key, Service: "consent-store", Method: "POST", Path: "/v2/consent-requests/dave", Status: 201, Applied: true, ApplyOrder: 1})
	read("r2")
	again = perform("r2")
	b.request(simulate.Request{Replica: "r2", Call: again.Key, Service: "consent-store", Method: "POST", Path: "/v2/consent-requests/dave/2", Status: 201, Applied: true, ApplyOrder: 2})
	if fs := decideUAIdempotent(evidenceOf(b.h)); len(fs) != 1 {
		t.Fatalf("a second write for the same requirement at the service was not blamed: %+v", fs)
	}
}
