package timeline

import (
	"bytes"
	"strings"
	"testing"

	"github.com/astrabox-dev/astrabox/internal/conformance"
	"github.com/astrabox-dev/astrabox/internal/harness"
	"github.com/astrabox-dev/astrabox/internal/secrets"
	"github.com/astrabox-dev/astrabox/internal/simulate"
	"github.com/astrabox-dev/astrabox/internal/term"
)

// TestTimelineMasksNamesAndCutSecrets renders a history whose RuntimeFile name and environment name are
// secrets, and whose error message holds a secret across the point where the timeline cuts long messages.
func TestTimelineMasksNamesAndCutSecrets(t *testing.T) {
	canary := conformance.NewCanary()
	set := &secrets.Set{}
	set.Add(canary, "configuration field secrets.model_api_key")
	h := &simulate.History{Scenario: "s", Events: []*simulate.Event{{Kind: simulate.EventCall, Message: "prepare_session returned",
		Call: &simulate.CallRecord{Key: "r1#1", Outcome: simulate.OutcomeRaised,
			Error:  &harness.PyError{Type: "RuntimeError", Message: strings.Repeat("x", 100) + canary},
			Result: &harness.Result{Type: simulate.KindMaterials, Files: []harness.MaterialFile{{Name: canary + ".json", Content: []byte("{}")}}, Environment: map[string]string{"KEY_" + canary: "v"}}}}}}
	var out bytes.Buffer
	if err := Write(&out, term.NewStyles(false), h, set, "/proj"); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	if strings.Contains(got, canary[:20]) {
		t.Fatalf("the timeline shows (part of) a canary:\n%s", got)
	}
	if !strings.Contains(got, secrets.Marker("raw")+".json") || !strings.Contains(got, "KEY_"+secrets.Marker("raw")+"=<redacted>") {
		t.Fatalf("names not shown masked:\n%s", got)
	}
}

// TestServicesAndEgress renders a history with requests to the double and to declared services and with
// egress attempts: the service requests name their service, the header names the services, and a refused
// and an allowed attempt are each shown with their replica, callback, destination and the provider line that
// connected (project-relative when inside the project), secrets masked.
func TestServicesAndEgress(t *testing.T) {
	set := &secrets.Set{}
	set.Add("tok-3f9a1c77e2b4", "a value service oauth answered")
	h := &simulate.History{Scenario: "s", Requests: []simulate.Request{
		{Seq: 1, Replica: "r1", Call: "r1#2", Method: "GET", Path: "/v1/secret/data/a", Status: 404, Service: "vault"},
		{Seq: 2, Replica: "r1", Call: "r1#2", Method: "POST", Path: "/oauth2/token", Status: 200, Service: "oauth", Held: true},
		{Seq: 3, Replica: "r2", Method: "GET", Path: "/consents/alice", Status: 200},
	}, Egress: []simulate.EgressAttempt{
		{Replica: "r2", Call: "r2#2", Callback: "prepare_session", Scheme: "https", Host: "api.example.com:443", Method: "GET", Path: "/x?k=tok-3f9a1c77e2b4", Refused: true,
			File: "/proj/src/acme/telemetry.py", Line: 41, Function: "_ping"},
		{Replica: "r2", Host: "elsewhere.example:443", Method: "CONNECT", Refused: true, File: "/usr/lib/python3/site.py", Line: 7},
		{Replica: "r1", Host: "mirror.example.org:80", Method: "CONNECT"},
	}}
	var out bytes.Buffer
	if err := Write(&out, term.NewStyles(false), h, set, "/proj"); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		"requests: 3 request(s) to the deployment double and the declared services (oauth, vault)\n",
		"   #1   r1  GET    /v1/secret/data/a (r1#2) -> 404 via vault\n",
		"   #2   r1  POST   /oauth2/token (r1#2) -> 200 [held] via oauth\n",
		"   #3   r2  GET    /consents/alice (background) -> 200\n",
		"egress: 3 connection(s) to destinations that are not declared services\n",
		"   r2  GET https://api.example.com:443/x?k=" + secrets.Marker("url-encoded") + " (r2#2 prepare_session) refused at src/acme/telemetry.py:41\n",
		"   r2  CONNECT elsewhere.example:443 (no callback in flight) refused at /usr/lib/python3/site.py:7\n",
		"   r1  CONNECT mirror.example.org:80 (no callback in flight) let through (egress = \"allow\")\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("timeline lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "tok-3f9a1c77e2b4") {
		t.Errorf("the timeline shows a secret:\n%s", got)
	}
}

// TestDoubleOnly keeps the heading of a run without declared services as it was.
func TestDoubleOnly(t *testing.T) {
	h := &simulate.History{Scenario: "s", Requests: []simulate.Request{{Seq: 1, Replica: "r1", Method: "PUT", Path: "/records/a", Status: 200, Call: "r1#1"}}}
	var out bytes.Buffer
	if err := Write(&out, term.NewStyles(false), h, &secrets.Set{}, ""); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	if !strings.Contains(got, "double: 1 request(s) to the deployment double\n   #1   r1  PUT    /records/a (r1#1) -> 200\n") || strings.Contains(got, "egress:") {
		t.Errorf("double-only timeline changed:\n%s", got)
	}
}

// TestEveryShownStringIsMasked puts a canary in every string of a history the timeline shows (scenario,
// provider, engine, messages, codes, call keys, errors, material names, requests, egress attempts and the
// file that connected) and requires the timeline to show none of it: the view is masked as one, so no field
// is masked by name.
func TestEveryShownStringIsMasked(t *testing.T) {
	c := conformance.NewCanary()
	set := &secrets.Set{}
	set.Add(c, "configuration field secrets.model_api_key")
	h := &simulate.History{Scenario: "s-" + c, Provider: "p-" + c, Engine: "e-" + c, Events: []*simulate.Event{
		{Kind: simulate.EventStep, Step: 1, Message: "step " + c},
		{Kind: simulate.EventOutcome, Replica: "r1-" + c, Code: "CODE_" + c, Message: "outcome " + c},
		{Kind: simulate.EventSandbox, Message: "sandbox " + c},
		{Kind: simulate.EventCall, Message: "m " + c, Call: &simulate.CallRecord{Key: "r1#" + c, Outcome: simulate.OutcomeRaised,
			Error:  &harness.PyError{Type: "E" + c, Message: c},
			Result: &harness.Result{Type: harness.KindMaterials, Files: []harness.MaterialFile{{Name: c}}, Environment: map[string]string{c: c}}}},
	}, Requests: []simulate.Request{{Seq: 1, Replica: "r1" + c, Call: "r1#" + c, Method: "GET" + c, Path: "/" + c, Service: "svc" + c}},
		Egress: []simulate.EgressAttempt{{Replica: "r2" + c, Call: "c" + c, Callback: "cb" + c, Scheme: "https", Host: c + ".example:443",
			Method: "GET" + c, Path: "/" + c, File: "/proj/" + c + ".py", Line: 3}}}
	var out bytes.Buffer
	if err := Write(&out, term.NewStyles(false), h, set, "/proj"); err != nil {
		t.Fatal(err)
	}
	if m := set.FindString(out.String()); len(m) > 0 {
		t.Fatalf("the timeline shows the canary (%s):\n%s", m[0].Encoding, out.String())
	}
	if n := strings.Count(out.String(), secrets.Marker("raw")); n < 20 {
		t.Errorf("only %d masked strings shown: the test's history did not reach the timeline:\n%s", n, out.String())
	}
}
