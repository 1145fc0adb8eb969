package cli

import (
	"strings"
	"testing"
)

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
