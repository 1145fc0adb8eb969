package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestExploreReportsThenWarnsWhenFailuresCannotBeSaved explores a leaking provider with a failures directory
// that cannot be created (under a regular file: even root cannot make it, so the test holds for every
// user). The report must still be written, with the failure, and a warning must follow it.
func TestExploreReportsThenWarnsWhenFailuresCannotBeSaved(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python")
	}
	blocker := filepath.Join(t.TempDir(), "not-a-directory")
	if err := os.WriteFile(blocker, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := run(t, "conformance", "run", "--project", repoPath("testdata/providers/broken/leak-log"),
		"--explore", "2", "--shrink-budget", "2", "--failures-dir", filepath.Join(blocker, "failures"), "--format", "json")
	if code != ExitFailed {
		t.Fatalf("exit %d, want %d\n%s", code, ExitFailed, stderr)
	}
	var rep struct {
		Results []struct {
			Check, Status string
		} `json:"results"`
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil || len(rep.Results) == 0 {
		t.Fatalf("no report on stdout (%v):\n%s", err, stdout)
	}
	if !strings.Contains(stderr, "warning:") || !strings.Contains(stderr, "could not be saved") || !strings.Contains(stderr, "--failures-dir") {
		t.Fatalf("no warning about the unsaved failure:\n%s", stderr)
	}
}
