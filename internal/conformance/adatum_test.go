package conformance

import (
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/astrabox-dev/astrabox/internal/discovery"
	"github.com/astrabox-dev/astrabox/internal/services"
	"github.com/astrabox-dev/astrabox/internal/simulate"
	"github.com/astrabox-dev/astrabox/internal/stubs"
)

// adatumGrantPath is the grant lookup of Adatum's identity provider (correct/adatum_idp): the stubs answer
// it 200 in a subject's Started scenario state and 403 consent_required in its consent-required state.
const (
	adatumGrantPrefix = "/v2/subjects/"
	adatumGrantSuffix = "/grants/agent-tools"
)

// stubConsentProof is what the stubs' own record says about a provider whose consent is held by WireMock
// scenarios: the turns that returned files although their own grant lookup was answered from the pending
// scenario state, the turns refused in that state, and how many grant lookups were checked against the
// scenario moves.
type stubConsentProof struct {
	through []string
	refused int
	lookups int
}

// proveFromStubs walks every history of a suite run and replays the scenario state the kit set at service
// (the starting states and each consent move the history records for that service, translated into the
// service's own scenario state names). Every grant lookup a call made must have been answered as that state
// says (200 in the granted state, 403 in the pending one): that is the stubs' record agreeing with the moves.
// A prepare_turn that returned files while its principal's scenario was pending, and whose own lookup was
// answered 403, is a turn let through against the service's word.
func proveFromStubs(t *testing.T, settings *Settings, hists []*simulate.History, service string) stubConsentProof {
	t.Helper()
	i := slices.IndexFunc(settings.Services, func(s services.Spec) bool { return s.Name == service })
	if i < 0 {
		t.Fatalf("the project declares no service %s", service)
	}
	spec := settings.Services[i]
	if spec.Consent == nil || spec.Consent.Form != services.FormScenario {
		t.Fatalf("service %s does not hold consent in WireMock scenarios: %+v", service, spec.Consent)
	}
	pending := spec.Consent.Word(simulate.ConsentPending)
	answers := map[string]int{spec.Consent.Word(simulate.ConsentGranted): http.StatusOK, pending: http.StatusForbidden}
	var proof stubConsentProof
	held := false
	for _, h := range hists {
		if !slices.ContainsFunc(h.Prerequisites, func(p simulate.ServicePrerequisite) bool { return p.Service == service }) {
			continue
		}
		held = true
		// principal -> the scenario state the stubs hold; a principal the kit never moved stays in Started
		// (the kit resets every scenario before each of its scenarios).
		state := map[string]string{}
		at := func(p string) string {
			if s, ok := state[p]; ok {
				return s
			}
			return stubs.StartedState
		}
		for _, p := range h.Principals {
			if slices.Contains(p.Services, service) {
				state[p.Principal] = spec.Consent.Word(p.Consent)
			}
		}
		for _, e := range h.Events {
			if e.Consent != nil {
				if slices.Contains(e.Consent.Services, service) {
					state[e.Consent.Principal] = spec.Consent.Word(e.Consent.Consent)
				}
				continue
			}
			call := e.Call
			if call == nil {
				continue
			}
			answeredPending := false
			for _, r := range h.RequestsOf(call.Key) {
				who, ok := strings.CutPrefix(r.Path, adatumGrantPrefix)
				if ok {
					who, ok = strings.CutSuffix(who, adatumGrantSuffix)
				}
				if r.Service != service || r.Method != http.MethodGet || !ok || r.Background {
					continue
				}
				proof.lookups++
				want, known := answers[at(who)]
				if !known || r.Status != want {
					t.Errorf("%s %s: %s (%s) looked up %s's grant while the scenario was %q and the stubs answered %d, want %d",
						h.Scenario, call.Key, call.Method, call.Ctx.Session, who, at(who), r.Status, want)
				}
				if who == call.Ctx.Principal && r.Status == http.StatusForbidden {
					answeredPending = true
				}
			}
			if call.Method != simulate.CallPrepareTurn || at(call.Ctx.Principal) != pending {
				continue
			}
			switch {
			case call.Outcome == simulate.OutcomeReturned && call.Result != nil && len(call.Result.Files) > 0 && answeredPending:
				proof.through = append(proof.through, fmt.Sprintf("%s: %s prepare_turn for %s (attempt %s) returned %d file(s) after the stubs answered its lookup 403 from scenario state %q",
					h.Scenario, call.Key, call.Ctx.Session, call.Ctx.Attempt, len(call.Result.Files), pending))
			case call.Outcome == simulate.OutcomeRaised:
				proof.refused++
			}
		}
	}
	if !held {
		t.Fatalf("no scenario moved consent at service %s", service)
	}
	return proof
}

// TestAdatumConsentHeldByStubScenarios proves both Adatum fixtures from the stubs' own record rather than
// from the kit's verdict: the suite's scenario moves reached the stubs (every grant lookup was answered as the
// moved scenario state says), the correct provider refused every turn its lookup was answered 403 for, and
// the receipt-keeping twin returned files from at least one such turn. The record is each fixture's recorded
// run in every lane (recordedThenLive; the project's settings are read without Python); the long lane also
// plays both live.
func TestAdatumConsentHeldByStubScenarios(t *testing.T) {
	t.Run("correct", func(t *testing.T) {
		settings := fixtureSettings(t, "correct/adatum_idp")
		recordedThenLive(t, "correct/adatum_idp", false, func(t *testing.T, j judged) {
			correct := proveFromStubs(t, settings, j.hists, "idp")
			t.Logf("correct: %d grant lookups, %d turns refused in the pending state", correct.lookups, correct.refused)
			if len(correct.through) > 0 {
				t.Errorf("the correct provider let turns through a pending scenario:\n%s", strings.Join(correct.through, "\n"))
			}
			if correct.refused == 0 || correct.lookups == 0 {
				t.Errorf("the suite never put a turn of the correct provider before a pending scenario (%d refused, %d lookups)", correct.refused, correct.lookups)
			}
		})
	})
	t.Run("twin", func(t *testing.T) {
		settings := fixtureSettings(t, "broken/ua-authority-idp-receipt")
		recordedThenLive(t, "broken/ua-authority-idp-receipt", false, func(t *testing.T, j judged) {
			twin := proveFromStubs(t, settings, j.hists, "idp")
			t.Logf("twin: %d grant lookups, %d turns refused in the pending state, through:\n%s", twin.lookups, twin.refused, strings.Join(twin.through, "\n"))
			if len(twin.through) == 0 {
				t.Fatal("the stubs' record shows no turn of the twin that returned files while its principal's scenario was pending")
			}
		})
	})
}

// fixtureSettings reads a fixture's [tool.astrabox] settings as a run does, without resolving an interpreter.
func fixtureSettings(t *testing.T, fixture string) *Settings {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "..", "testdata", "providers", fixture))
	if err != nil {
		t.Fatal(err)
	}
	p, err := discovery.LoadProject(dir)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ParseSettings(p.Settings, p.SettingsFile, p.Dir)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
