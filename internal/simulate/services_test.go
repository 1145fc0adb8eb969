package simulate

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/astrabox-dev/astrabox/internal/egress"
	"github.com/astrabox-dev/astrabox/internal/harness"
	"github.com/astrabox-dev/astrabox/internal/services"
)

const egressScenario = `
name: egress
seed: 3
replicas: 2
principals:
  alice: {consent: granted}
  mallory: {consent: granted}
steps:
  - {op: cold_start, session: s1, agent: agent-1, principal: alice, replica: r1}
  - {op: cold_start, session: s2, agent: agent-1, principal: mallory, replica: r2,
     double: [{kind: unavailable, method: POST, path: /oauth2/, times: 1}]}
  - {op: cold_start, session: s3, agent: agent-1, principal: mallory, replica: r2}
`

// TestDeclaredServicesThroughTheProxy runs unchanged https:// code of a provider against its declared service
// (stubs): the requests land in the history like the double's, a step's fault applies to them, the token
// the service handed out is a secret, and the undeclared destination is refused and recorded.
func TestDeclaredServicesThroughTheProxy(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python")
	}
	dir, _ := filepath.Abs(filepath.Join("testdata", "providers", "egress"))
	specs := []services.Spec{
		{Name: "tokens", URLs: []string{"https://login.tokens-corp.example"}, Hosts: []string{"login.tokens-corp.example:443"},
			Stubs: filepath.Join(dir, "stubs"), SecretFields: services.DefaultSecretFields},
		{Name: "records", URLs: []string{"https://records.corp.example:8443"}, Hosts: []string{"records.corp.example:8443"},
			Stubs: filepath.Join(dir, "records")},
		{Name: "audit", URLs: []string{"http://audit.corp.example"}, Hosts: []string{"audit.corp.example:80"},
			Stubs: filepath.Join(dir, "audit")},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	svcs, err := StartServices(ctx, specs, egress.PolicyRefuse)
	if err != nil {
		t.Fatal(err)
	}
	defer svcs.Close()
	sc, err := ParseScenario("egress.yaml", []byte(egressScenario))
	if err != nil {
		t.Fatal(err)
	}
	h, err := Run(ctx, sc, Options{Python: "python3", ProjectDir: dir, Target: "egress_provider:Egress", Paths: []string{dir},
		Config: testConfig(), Limits: harness.DefaultLimits(), Services: svcs})
	if err != nil {
		t.Fatal(err)
	}
	var served []Request
	by := map[string][]Request{}
	for _, rq := range h.Requests {
		by[rq.Service] = append(by[rq.Service], rq)
		if rq.Service == "tokens" {
			served = append(served, rq)
		}
	}
	if len(served) != 3 {
		t.Fatalf("service requests = %+v (all: %+v)", served, h.Requests)
	}
	// http.client over TLS and asyncio streams over plain HTTP never read the proxy variables: the harness
	// routes them to the same service (the 503 step raised before reaching them).
	for _, name := range []string{"records", "audit"} {
		if len(by[name]) != 2 {
			t.Fatalf("%s requests = %+v", name, by[name])
		}
		for _, rq := range by[name] {
			if !rq.Applied || rq.Callback != "prepare_session" || rq.Call == "" {
				t.Errorf("%s request = %+v", name, rq)
			}
		}
	}
	if by["records"][0].Host != "records.corp.example:8443" || by["records"][0].Method != "PUT" || by["audit"][0].Host != "audit.corp.example:80" {
		t.Errorf("records %+v audit %+v", by["records"][0], by["audit"][0])
	}
	for i, rq := range served {
		if rq.Host != "login.tokens-corp.example:443" || rq.Path != "/oauth2/token" || rq.Method != "POST" || rq.Callback != "prepare_session" || rq.Call == "" {
			t.Errorf("request %d = %+v", i, rq)
		}
	}
	if served[0].Status != 200 || !served[0].Applied || served[1].Status != 503 || served[1].Applied || served[2].Status != 200 {
		t.Errorf("statuses: %d %d %d", served[0].Status, served[1].Status, served[2].Status)
	}
	secret := false
	for _, s := range h.Secrets {
		if s.Value == "svc-token-9f3e2a" {
			secret = true
		}
	}
	if !secret {
		t.Error("the token the service answered is not among the history's secrets")
	}
	if len(h.Egress) != 2 {
		t.Fatalf("egress attempts = %+v", h.Egress)
	}
	hosts := map[string]bool{}
	for _, a := range h.Egress {
		hosts[a.Host] = true
		if !a.Refused || a.Replica != "r2" || a.Callback != "prepare_session" || a.Step != 3 {
			t.Errorf("egress attempt = %+v", a)
		}
	}
	// urllib asked the proxy (CONNECT); http.client resolved the name itself and the harness refused it.
	if !hosts["telemetry.example.net:443"] || !hosts["metrics.example.org:443"] {
		t.Errorf("egress hosts = %v", hosts)
	}
}
