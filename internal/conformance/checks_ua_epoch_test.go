package conformance

import (
	"testing"

	"github.com/astrabox-dev/astrabox/internal/harness"
	"github.com/astrabox-dev/astrabox/internal/simulate"
)

// TestUAIdempotentNewRequirementAfterConsentChange: a check that granted consent and a check after the
// principal revoked it anew answer differently, and that is no breach: the consent change started a new
// requirement, even though the pending state reads the same. Without the change, the same answers are one.
func TestUAIdempotentNewRequirementAfterConsentChange(t *testing.T) {
	build := func(revoke bool) *simulate.History {
		b := newHist("x")
		perform := func(replica string, result *harness.Result) {
			b.call(&simulate.CallRecord{Replica: replica, Method: "read_user_actions", Ctx: simulate.CallContext{Session: "s-dave", Principal: "dave"},
				Outcome: simulate.OutcomeReturned, Result: pendingState()})
			b.call(&simulate.CallRecord{Replica: replica, Method: "perform_user_action", Args: map[string]any{"action_id": "check-consent"},
				Ctx: simulate.CallContext{Session: "s-dave", Principal: "dave"}, Outcome: simulate.OutcomeReturned, Result: result})
		}
		perform("r1", &harness.Result{Type: simulate.KindUserActionState, Ready: true})
		if revoke {
			b.h.Events = append(b.h.Events, &simulate.Event{Kind: simulate.EventPlatform, Message: "consent of dave is now pending at the identity service",
				Consent: &simulate.ConsentState{Principal: "dave", Consent: simulate.ConsentPending}})
		}
		perform("r2", pendingState())
		return b.h
	}
	if fs := decideUAIdempotent(evidenceOf(build(true))); len(fs) != 0 {
		t.Fatalf("a new requirement after a consent change was blamed: %+v", fs)
	}
	if fs := decideUAIdempotent(evidenceOf(build(false))); len(fs) != 1 {
		t.Fatalf("different answers for one requirement were not blamed: %+v", fs)
	}
}
