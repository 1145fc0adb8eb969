package simulate

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/astrabox-dev/astrabox/internal/egress"
	"github.com/astrabox-dev/astrabox/internal/services"
	"github.com/astrabox-dev/astrabox/internal/stubs"
)

// idpSpec is a stubs service holding each principal's consent in a WireMock scenario (consent-<principal>).
func idpSpec(t *testing.T) services.Spec {
	t.Helper()
	dir, _ := filepath.Abs(filepath.Join("testdata", "prereq", "idp"))
	return services.Spec{Name: "idp", URLs: []string{"https://idp.corp.example"}, Hosts: []string{"idp.corp.example:443"}, Stubs: dir,
		Consent: &services.Prerequisite{Form: services.FormScenario, Scenario: "consent-{principal}",
			States: map[string]string{services.PrerequisiteGranted: stubs.StartedState, services.PrerequisitePending: "awaiting-consent"}}}
}

func stubSet(t *testing.T, s *Services, name string) *stubs.Set {
	t.Helper()
	h := s.standIns[name].Handler()
	set, ok := h.(*stubs.Set)
	if !ok {
		t.Fatalf("%s stand-in handler is %T", name, h)
	}
	return set
}

// TestServiceConsentMovesWithTheDouble: a service that declares consent gets every principal's starting
// state and every set_consent by its control request, straight to its stand-in (the stub scenario's state
// moves; no provider request is recorded), and the history says which services hold it and what moved where.
func TestServiceConsentMovesWithTheDouble(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	svcs, err := StartServices(ctx, []services.Spec{idpSpec(t)}, egress.PolicyRefuse)
	if err != nil {
		t.Fatal(err)
	}
	defer svcs.Close()
	sc, err := ParseScenario("consent.yaml", []byte(`name: consent
replicas: 1
principals:
  alice: {consent: granted}
  bob: {consent: pending}
steps:
  - {op: set_consent, principal: alice, consent: pending}
`))
	if err != nil {
		t.Fatal(err)
	}
	h, err := Run(ctx, sc, Options{Services: svcs})
	if err != nil {
		t.Fatal(err)
	}
	set := stubSet(t, svcs, "idp")
	if a, b := set.State("consent-alice"), set.State("consent-bob"); a != "awaiting-consent" || b != "awaiting-consent" {
		t.Errorf("stub states: alice %q, bob %q; want both awaiting-consent", a, b)
	}
	if len(h.Prerequisites) != 1 || h.Prerequisites[0] != (ServicePrerequisite{Service: "idp", Prerequisite: PrerequisiteConsent}) {
		t.Errorf("prerequisites = %+v", h.Prerequisites)
	}
	for _, pr := range h.Principals {
		if len(pr.Services) != 1 || pr.Services[0] != "idp" {
			t.Errorf("principal %s seeded at %v, want [idp]", pr.Principal, pr.Services)
		}
	}
	if len(h.Requests) != 0 {
		t.Errorf("control requests recorded as the provider's: %+v", h.Requests)
	}
	var changed *Event
	var seeded []string
	for _, e := range h.Events {
		if e.Consent != nil {
			changed = e
		} else if strings.HasPrefix(e.Message, "consent of ") {
			seeded = append(seeded, e.Message)
		}
	}
	if changed == nil || changed.Consent.Consent != ConsentPending || len(changed.Consent.Services) != 1 ||
		changed.Message != "consent of alice is now pending at the identity service and at service idp" {
		t.Errorf("set_consent event = %+v", changed)
	}
	if strings.Join(seeded, "; ") != "consent of alice is granted at service idp; consent of bob is pending at service idp" {
		t.Errorf("seed events = %q", seeded)
	}
}

// TestServiceConsentControlRefusedIsARunError: a control request the stand-in refuses (a principal whose
// scenario no mapping has, a state its scenario lacks) stops the run with an error that names the service, the principal, the request
// and the answer, at the start and at a set_consent step alike; never a history that would be judged.
func TestServiceConsentControlRefusedIsARunError(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	svcs, err := StartServices(ctx, []services.Spec{idpSpec(t)}, egress.PolicyRefuse)
	if err != nil {
		t.Fatal(err)
	}
	defer svcs.Close()
	for src, want := range map[string]struct {
		who    string
		status int
	}{
		"name: a\nreplicas: 1\nprincipals:\n  carol: {consent: pending}\nsteps:\n  - {op: advance, seconds: 1}\n":                           {"carol", 404},
		"name: b\nreplicas: 1\nprincipals:\n  dave: {consent: granted}\nsteps:\n  - {op: set_consent, principal: dave, consent: pending}\n": {"dave", 422}, // WireMock 3 answers a state its scenario lacks 422
	} {
		sc, err := ParseScenario("s.yaml", []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		h, err := Run(ctx, sc, Options{Services: svcs})
		var ce *services.ControlError
		who := want.who
		if h != nil || !errors.As(err, &ce) || ce.Principal != who || ce.Status != want.status ||
			!strings.Contains(err.Error(), fmt.Sprintf("service idp: the control request that moves consent of %s to pending (PUT /__admin/scenarios/consent-%s/state) answered %d", who, who, want.status)) {
			t.Errorf("%s: history %v, err %v", who, h != nil, err)
		}
	}
}
