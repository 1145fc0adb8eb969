package conformance

import (
	"strings"
	"testing"

	"github.com/astrabox-dev/astrabox/internal/report"
	"github.com/astrabox-dev/astrabox/internal/simulate"
)

// TestKitEgressUndeclared: a refused connection is a finding naming the callback, the host and the
// callback's source line, reported once per callback and host; a let-through one is not; with
// egress = "allow" the rule does not apply.
func TestKitEgressUndeclared(t *testing.T) {
	h := &simulate.History{Scenario: "s", Egress: []simulate.EgressAttempt{
		{Replica: "r1", Call: "r1#2", Callback: string(simulate.CallPrepareSession), Scheme: "https", Host: "telemetry.corp.example:443", Method: "POST", Path: "/v1/usage", Refused: true},
		{Replica: "r2", Call: "r2#2", Callback: string(simulate.CallPrepareSession), Scheme: "https", Host: "telemetry.corp.example:443", Method: "POST", Path: "/v1/usage", Refused: true},
		{Replica: "r1", Scheme: "http", Host: "api.example.com:80", Method: "GET", Path: "/", Refused: true},
		{Replica: "r1", Scheme: "https", Host: "allowed.example:443", Refused: false},
	}}
	ev := &Evidence{Load: overridesOnly(simulate.CallPrepareSession), Histories: []*simulate.History{h}}
	fs := decideKitEgressUndeclared(ev)
	if len(fs) != 2 {
		t.Fatalf("%d findings, want 2: %+v", len(fs), fs)
	}
	if !strings.Contains(fs[0].Message, "prepare_session tried to reach telemetry.corp.example:443") || fs[0].Location == nil || fs[0].Location.Line != 10 {
		t.Errorf("first finding %q at %+v", fs[0].Message, fs[0].Location)
	}
	if !strings.Contains(fs[1].Message, "outside any callback on replica r1") || fs[1].Location != nil {
		t.Errorf("second finding %q at %+v", fs[1].Message, fs[1].Location)
	}
	if ex := exEgress(ev); !ex.Met {
		t.Errorf("not exercised: %+v", ex)
	}
	ev.EgressAllowed = true
	if ex := exEgress(ev); ex.NotApplicable == "" {
		t.Errorf("applies under egress = allow: %+v", ex)
	}
	c, _ := Lookup(KitEgressUndeclared)
	if c.Kind != KindKitRule || len(c.Clauses) != 0 || c.Severity != report.SeverityError {
		t.Errorf("kit rule %+v", c)
	}
}
