package conformance

import (
	"bytes"
	"strings"
	"testing"

	"github.com/astrabox-dev/astrabox/internal/simulate"
)

// TestNewBrokenFixturesDoWhatTheyClaim finds, in the calls and requests of the default suite on the broken
// fixtures written for the provider-driven suite, the breach each one claims. `make test` reads the
// fixtures' recorded evidence, so no Python starts (TestFixtures, in the long lane, plays each fixture live
// and fails when its recording is stale); the long lane also finds each claim in a live run.
func TestNewBrokenFixturesDoWhatTheyClaim(t *testing.T) {
	for _, tc := range []struct {
		dir   string
		claim func(t *testing.T, hists []*simulate.History)
	}{
		{"ua-idempotent-own-id", claimAuditPerCheck},
		{"turn-validity-stale-hour", claimStaleRefresh},
		{"sync-identity-creator", claimCreatorKey},
		{"recover-truth-503", claimTrueAfter503},
		{"turn-idempotent-blind-retry", claimBlindRetry},
	} {
		t.Run(tc.dir, func(t *testing.T) {
			recordedThenLive(t, "broken/"+tc.dir, false, func(t *testing.T, j judged) { tc.claim(t, j.hists) })
		})
	}
}

// claimAuditPerCheck: perform_user_action("check-current-consent") on two replicas for bob's one pending
// requirement, each PUTting its own audit record.
func claimAuditPerCheck(t *testing.T, hists []*simulate.History) {
	paths, replicas := map[string]bool{}, map[string]bool{}
	for _, h := range hists {
		for _, c := range h.CallsOf("perform_user_action") {
			if c.Args["action_id"] != "check-current-consent" || c.Ctx.Session != "s-bob" {
				continue
			}
			for _, rq := range h.RequestsOf(c.Key) {
				if rq.Method == "PUT" && rq.Applied && strings.HasPrefix(rq.Path, "/v1/records/northwind-audit/bob/") {
					paths[rq.Path] = true
					replicas[c.Replica] = true
				}
			}
		}
	}
	if len(paths) < 2 || len(replicas) < 2 {
		t.Errorf("want audit records from checks on two replicas; got %d record(s) from %d replica(s)", len(paths), len(replicas))
	}
}

// claimStaleRefresh: a refresh of an attempt with a 3600 s validity returned the bytes it renews.
func claimStaleRefresh(t *testing.T, hists []*simulate.History) {
	for _, h := range hists {
		last := map[string][]byte{}
		for _, c := range h.CallsOf("prepare_turn") {
			if c.Result == nil || len(c.Result.Files) == 0 {
				continue
			}
			k := c.Ctx.Session + "/" + c.Ctx.Attempt
			got := c.Result.Files[0].Content
			if c.Ctx.Refresh && bytes.Equal(last[k], got) && string(c.Result.TurnValiditySeconds) == "3600.0" {
				return
			}
			last[k] = got
		}
	}
	t.Errorf("no refresh of a 3600 s material returned the material it renews")
}

// claimCreatorKey: synchronize of two Agents of alice applied writes to one record keyed by "alice".
func claimCreatorKey(t *testing.T, hists []*simulate.History) {
	for _, h := range hists {
		agents := map[string]bool{}
		for _, c := range h.CallsOf("synchronize") {
			for _, rq := range h.RequestsOf(c.Key) {
				if rq.Method == "PUT" && rq.Applied && rq.Path == "/v1/records/contoso/agents/alice" {
					agents[c.Ctx.Agent] = true
				}
			}
		}
		if len(agents) >= 2 {
			return
		}
	}
	t.Errorf("no two Agents wrote /v1/records/contoso/agents/alice")
}

// claimTrueAfter503: recover answered True after its fence got a 503, and a write of that operation was
// applied after recover settled.
func claimTrueAfter503(t *testing.T, hists []*simulate.History) {
	for _, h := range hists {
		for _, c := range h.CallsOf("recover") {
			if c.Result == nil || c.Result.Type != simulate.KindBool || !c.Result.Value {
				continue
			}
			refused := false
			for _, rq := range h.RequestsOf(c.Key) {
				refused = refused || (rq.Path == "/v1/fences" && rq.Status == 503)
			}
			id := operationID(c)
			for _, rq := range h.Requests {
				if refused && rq.Operation == id && rq.Applied && rq.ApplyOrder > c.ApplyMark {
					return
				}
			}
		}
	}
	t.Errorf("no recover answered True after a 503 fence with a write of its operation applied afterwards")
}

// claimBlindRetry: one prepare_turn whose material PUT was dropped issued a second credential, PUT again (412)
// and still returned material.
func claimBlindRetry(t *testing.T, hists []*simulate.History) {
	for _, h := range hists {
		for _, c := range h.CallsOf("prepare_turn") {
			credentials, dropped, refused := 0, false, false
			for _, rq := range h.RequestsOf(c.Key) {
				switch {
				case rq.Method == "POST" && rq.Path == "/v1/credentials" && rq.Applied:
					credentials++
				case rq.Method == "PUT" && rq.Dropped:
					dropped = true
				case rq.Method == "PUT" && rq.Status == 412:
					refused = true
				}
			}
			if credentials >= 2 && dropped && refused && c.Outcome == simulate.OutcomeReturned {
				return
			}
		}
	}
	t.Errorf("no prepare_turn re-issued a credential after a dropped PUT and answered anyway")
}
