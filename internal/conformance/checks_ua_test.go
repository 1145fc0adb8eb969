package conformance

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/astrabox-dev/astrabox/internal/harness"
	"github.com/astrabox-dev/astrabox/internal/simulate"
)

func pendingState() *harness.Result {
	return &harness.Result{Type: simulate.KindUserActionState, Ready: false,
		UserAction: json.RawMessage(`{"message":"Grant consent","status":"pending","url":"https://identity.example/c"}`),
		Actions:    []harness.ActionCommand{{ID: "check-consent", Label: "Check consent"}}}
}

// TestConsentFromTypedFactsOnly proves UA-AUTHORITY reads consent changes from typed facts: an event whose
// display text says consent changed, without the typed fact, changes nothing.
func TestConsentFromTypedFactsOnly(t *testing.T) {
	b := newHist("x")
	b.h.Principals = []simulate.ConsentState{{Principal: "dave", Consent: simulate.ConsentGranted}}
	b.platform("consent of dave is now pending at the identity service")
	b.call(turn("r1", "s1", "dave", false, true))
	if f := decideUAAuthority(evidenceOf(b.h)); len(f) != 0 {
		t.Fatalf("display text changed the verdict: %+v", f)
	}
	b = newHist("x")
	b.h.Principals = []simulate.ConsentState{{Principal: "dave", Consent: simulate.ConsentGranted}}
	b.consent("dave", simulate.ConsentPending)
	b.request(simulate.Request{Replica: "r1", Method: "GET", Path: "/v1/consents/dave", Status: 200})
	b.call(turn("r1", "s1", "dave", false, true))
	if f := decideUAAuthority(evidenceOf(b.h)); len(f) != 1 {
		t.Fatalf("a typed consent change was not seen: %+v", f)
	}
}

func turn(replica, session, principal string, read bool, returned bool) *simulate.CallRecord {
	c := &simulate.CallRecord{Replica: replica, Method: "prepare_turn", Ctx: simulate.CallContext{Session: session, Principal: principal, PriorStateRead: read}}
	if returned {
		c.Outcome = simulate.OutcomeReturned
		c.Result = &harness.Result{Type: simulate.KindMaterials}
	} else {
		c.Outcome = simulate.OutcomeRaised
		c.Error = &harness.PyError{Type: "PreparationUserActionRequired", UserAction: &harness.UserAction{Message: "m", Status: "pending"}}
	}
	return c
}

func TestUAAuthorityFromConsentChanges(t *testing.T) {
	b := newHist("custom")
	b.consent("dave", "pending")
	b.call(turn("r1", "s-dave", "dave", false, true)) // through while pending: breach
	b.call(&simulate.CallRecord{Replica: "r2", Method: "read_user_actions", Ctx: simulate.CallContext{Session: "s-dave", Principal: "dave"},
		Outcome: simulate.OutcomeReturned, Result: pendingState()})
	b.call(turn("r2", "s-dave", "dave", true, false)) // refused after a read
	b.consent("dave", "granted")
	b.call(turn("r2", "s-dave", "dave", true, true)) // granted: fine
	fs := decideUAAuthority(evidenceOf(b.h))
	if len(fs) != 1 {
		t.Fatalf("findings = %+v", fs)
	}
	if !strings.Contains(fs[0].Message, "1 turn(s) through") || !strings.Contains(fs[0].Message, "only after read_user_actions") {
		t.Fatalf("message = %q", fs[0].Message)
	}
}

func TestUAAuthorityCheckClearsUnknownConsent(t *testing.T) {
	b := newHist("custom")
	b.consent("dave", "pending")
	perform := b.call(&simulate.CallRecord{Replica: "r1", Method: "perform_user_action", Ctx: simulate.CallContext{Session: "s-dave", Principal: "dave"},
		Outcome: simulate.OutcomeReturned, Result: &harness.Result{Type: simulate.KindUserActionState, Ready: true}})
	b.request(simulate.Request{Replica: "r1", Call: perform.Key, Method: "POST", Path: "/v1/consents/dave/check", Status: 200, Applied: true, ApplyOrder: 1})
	b.call(turn("r1", "s-dave", "dave", true, true))
	if fs := decideUAAuthority(evidenceOf(b.h)); len(fs) != 0 {
		t.Fatalf("a turn after a consent check that reported ready was blamed: %+v", fs)
	}
}

func TestUAAuthorityFallsBackToStateReads(t *testing.T) {
	b := newHist("custom")
	b.call(&simulate.CallRecord{Replica: "r2", Method: "read_user_actions", Ctx: simulate.CallContext{Session: "s-bob", Principal: "bob"},
		Outcome: simulate.OutcomeReturned, Result: pendingState()})
	b.call(turn("r1", "s-bob", "bob", true, true))
	fs := decideUAAuthority(evidenceOf(b.h))
	if len(fs) != 1 || !strings.Contains(fs[0].Evidence[0].Text, "last user-action state read") {
		t.Fatalf("findings = %+v", fs)
	}
}

// TestInitialConsentFromHistory proves the starting consent comes from the history's typed facts, for any
// scenario (not only the default suite's), and that a history without them is not guessed at.
func TestInitialConsentFromHistory(t *testing.T) {
	b := newHist("anything")
	b.h.Principals = []simulate.ConsentState{{Principal: "alice", Consent: simulate.ConsentGranted}, {Principal: "dave", Consent: simulate.ConsentPending, OnCheck: simulate.ConsentGranted}}
	consent, onCheck, ok := initialConsent(b.h)
	if !ok || consent["dave"] != simulate.ConsentPending || consent["alice"] != simulate.ConsentGranted || onCheck["dave"] != simulate.ConsentGranted {
		t.Fatalf("got %v %v %v", consent, onCheck, ok)
	}
	if _, _, ok := initialConsent(newHist("bare").h); ok {
		t.Fatal("a history without principals claimed to know their consent")
	}
}

func TestUAStateLeavesUserActionProblemsToUAValid(t *testing.T) {
	bad := &harness.Result{Type: simulate.KindUserActionState, Ready: false,
		UserAction: json.RawMessage(`{"message":"Grant consent","status":"pending","url":"javascript:alert(1)"}`)}
	if p := stateProblems(bad); len(p) != 0 {
		t.Fatalf("UA-STATE reported a user-action validation problem: %v", p)
	}
	missing := &harness.Result{Type: simulate.KindUserActionState, Ready: false, Actions: []harness.ActionCommand{{ID: "a", Label: "A"}, {ID: "a", Label: "A"}}}
	p := stateProblems(missing)
	if len(p) != 2 {
		t.Fatalf("problems = %v", p)
	}
	b := newHist("x")
	b.call(&simulate.CallRecord{Replica: "r1", Method: "read_user_actions", Outcome: simulate.OutcomeReturned, Result: bad})
	if fs := decideUAValid(evidenceOf(b.h)); len(fs) != 1 || !strings.Contains(fs[0].Message, "url") {
		t.Fatalf("UA-VALID findings = %+v", fs)
	}
	if fs := decideUAState(evidenceOf(b.h)); len(fs) != 0 {
		t.Fatalf("UA-STATE findings = %+v", fs)
	}
}

func TestUAIdempotentNewRecordPerCall(t *testing.T) {
	build := func(paths ...string) *simulate.History {
		b := newHist("x")
		for i, p := range paths {
			b.call(&simulate.CallRecord{Replica: "r1", Method: "read_user_actions", Ctx: simulate.CallContext{Session: "s-bob", Principal: "bob"},
				Outcome: simulate.OutcomeReturned, Result: pendingState()})
			c := b.call(&simulate.CallRecord{Replica: []string{"r1", "r2"}[i%2], Method: "perform_user_action", Args: map[string]any{"action_id": "check-consent"},
				Ctx: simulate.CallContext{Session: "s-bob", Principal: "bob"}, Outcome: simulate.OutcomeReturned, Result: pendingState()})
			b.request(simulate.Request{Replica: c.Replica, Call: c.Key, Method: "POST", Path: "/v1/consents/bob/check", Status: 200, Applied: true})
			b.request(simulate.Request{Replica: c.Replica, Call: c.Key, Method: "PUT", Path: p, Status: 200, Applied: true})
		}
		return b.h
	}
	if fs := decideUAIdempotent(evidenceOf(build("/v1/records/checks/bob", "/v1/records/checks/bob"))); len(fs) != 0 {
		t.Fatalf("same writes blamed: %+v", fs)
	}
	fs := decideUAIdempotent(evidenceOf(build("/v1/records/checks/bob/1", "/v1/records/checks/bob/2")))
	if len(fs) != 1 || !strings.Contains(fs[0].Message, "/v1/records/checks/bob/2") {
		t.Fatalf("findings = %+v", fs)
	}
}

func TestUAAuthorityIgnoresProvidersWithoutPrerequisites(t *testing.T) {
	b := newHist("custom")
	b.consent("dave", "pending")
	b.call(turn("r1", "s-dave", "dave", false, true))
	if fs := decideUAAuthority(evidenceOf(b.h)); len(fs) != 0 {
		t.Fatalf("a provider that never consults consent was blamed: %+v", fs)
	}
	first := b.h.Events[1].Call
	b.request(simulate.Request{Replica: "r1", Call: first.Key, Method: "GET", Path: "/v1/consents/dave", Status: 200})
	if fs := decideUAAuthority(evidenceOf(b.h)); len(fs) != 1 {
		t.Fatalf("a provider that read the pending consent and went on was not blamed: %+v", fs)
	}
}
