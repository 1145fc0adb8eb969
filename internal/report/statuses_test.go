package report

import (
	"strings"
	"testing"

	"github.com/astrabox-dev/astrabox/internal/term"
)

// undecidedReport has a pass with what it was decided over, a not-applicable and a not-exercised result.
func undecidedReport() *Report {
	r := &Report{Schema: Schema, Tool: Tool{Name: "astrabox"}, Provider: Provider{Name: "p", Project: "/p"}, Seed: 3, Results: []Result{
		{Check: "TURN-IDEMPOTENT", Title: "idempotent", Area: "turn", Severity: SeverityError, Status: StatusPassed, Message: "kept in every scenario",
			DecidedOver: "14 prepare_turn calls in 3 scenarios: 2 retries of an answered attempt"},
		{Check: "RECOVER-TRUTH", Title: "truth", Area: "synchronize", Severity: SeverityError, Status: StatusNotApplicable,
			Message: "the provider keeps the platform's default recover, so there is nothing of its own to judge"},
		{Check: "UA-IDEMPOTENT", Title: "ua idempotent", Area: "user-actions", Severity: SeverityError, Status: StatusNotExercised,
			Message:     "not exercised: the check needs a perform_user_action for one pending requirement on two replicas",
			DecidedOver: "0 perform_user_action calls in 0 scenarios"},
	}}
	r.Summarize()
	return r
}

func TestNewStatusesInText(t *testing.T) {
	out := render(t, "text", term.NewStyles(false), 100, undecidedReport())
	for _, want := range []string{"NOT DECIDED:", "1 not exercised", "1 not applicable", "NOTEX  UA-IDEMPOTENT", "N/A    RECOVER-TRUTH",
		"over 14 prepare_turn calls in 3 scenarios: 2 retries", "reason: the provider keeps the platform's default recover"} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "PASSED") {
		t.Errorf("a run with a not-exercised result printed PASSED:\n%s", out)
	}
	// Without the not-exercised result the run passes.
	r := undecidedReport()
	r.Results = r.Results[:2]
	r.Summarize()
	if out := render(t, "text", term.NewStyles(false), 100, r); !strings.Contains(out, "PASSED: 1 not applicable, 1 passed") {
		t.Errorf("verdict without not-exercised results:\n%s", out)
	}
}

func TestNewStatusesInJSON(t *testing.T) {
	out := render(t, "json", term.NewStyles(false), 100, undecidedReport())
	for _, want := range []string{`"status": "not_exercised"`, `"status": "not_applicable"`, `"not_exercised": 1`, `"not_applicable": 1`,
		`"decided_over": "14 prepare_turn calls in 3 scenarios: 2 retries of an answered attempt"`} {
		if !strings.Contains(out, want) {
			t.Errorf("json lacks %s:\n%s", want, out)
		}
	}
	back, err := ReadJSON(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	if back.Summary.NotExercised != 1 || back.Results[0].DecidedOver == "" || !back.Undecided() {
		t.Fatalf("round trip lost the new fields: %+v", back.Summary)
	}
}

func TestNewStatusesInGitHub(t *testing.T) {
	out := render(t, "github", term.NewStyles(false), 100, undecidedReport())
	if !strings.Contains(out, "::warning title=UA-IDEMPOTENT::(not exercised) ua idempotent: not exercised") || !strings.Contains(out, "Decided over: 0 perform_user_action calls") {
		t.Errorf("no not-exercised annotation:\n%s", out)
	}
	if strings.Contains(out, "RECOVER-TRUTH") || strings.Contains(out, "title=TURN-IDEMPOTENT") {
		t.Errorf("a not-applicable or passed result was annotated:\n%s", out)
	}
	if !strings.Contains(out, "not applicable 1, not exercised 1") {
		t.Errorf("summary line lacks the new counts:\n%s", out)
	}
}

// TestMergeNewStatuses: a check one shard exercised and passed is passed; one no shard reached stays
// not_exercised; a failure anywhere wins; decided_over joins the shards'.
func TestMergeNewStatuses(t *testing.T) {
	a, b := undecidedReport(), undecidedReport()
	b.Results[2].Status, b.Results[2].DecidedOver = StatusPassed, "2 perform_user_action calls in 1 scenario"
	m, err := Merge(a, b)
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Results[2]; got.Status != StatusPassed || !strings.Contains(got.DecidedOver, "0 perform_user_action") || !strings.Contains(got.DecidedOver, "2 perform_user_action") {
		t.Fatalf("merged UA-IDEMPOTENT = %s over %q", got.Status, got.DecidedOver)
	}
	if m.Results[1].Status != StatusNotApplicable || m.Summary.NotExercised != 0 || m.Summary.NotApplicable != 1 {
		t.Fatalf("merged summary = %+v", m.Summary)
	}
	m, err = Merge(undecidedReport(), undecidedReport())
	if err != nil {
		t.Fatal(err)
	}
	if m.Results[2].Status != StatusNotExercised || m.Results[2].DecidedOver != "0 perform_user_action calls in 0 scenarios" {
		t.Fatalf("a check no shard reached = %s over %q", m.Results[2].Status, m.Results[2].DecidedOver)
	}
	c := undecidedReport()
	c.Results[2].Status = StatusFailed
	if m, _ = Merge(b, c); m.Results[2].Status != StatusFailed {
		t.Fatalf("a failure did not win: %s", m.Results[2].Status)
	}
}
