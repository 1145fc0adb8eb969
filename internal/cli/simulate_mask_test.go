package cli

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
			Result: &harness.Result{Type: "RuntimeMaterials", Files: []harness.MaterialFile{{Name: canary + ".json", Content: []byte("{}")}}, Environment: map[string]string{"KEY_" + canary: "v"}}}}}}
	var out bytes.Buffer
	writeTimeline(&out, term.NewStyles(false), h, set)
	got := out.String()
	if strings.Contains(got, canary[:20]) {
		t.Fatalf("the timeline shows (part of) a canary:\n%s", got)
	}
	if !strings.Contains(got, "‹secret:raw›.json") || !strings.Contains(got, "KEY_‹secret:raw›=<redacted>") {
		t.Fatalf("names not shown masked:\n%s", got)
	}
}

// TestSimulateJSONExitsOneWhenAChecksFails runs a leaking provider through `simulate --format json`: the exit
// code must say what the text format says.
func TestSimulateJSONExitsOneWhenAChecksFails(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python")
	}
	project := repoPath("testdata/providers/broken/leak-log")
	for _, format := range []string{"text", "json"} {
		code, stdout, stderr := run(t, "simulate", "cold-start", "--project", project, "--format", format)
		if code != ExitFailed {
			t.Errorf("--format %s: exit %d, want %d\n%s\n%s", format, code, ExitFailed, stdout, stderr)
		}
		if format == "json" && !strings.Contains(stderr, "LEAK-LOG") {
			t.Errorf("--format json: stderr does not name the failing check: %s", stderr)
		}
	}
}
