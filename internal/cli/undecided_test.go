package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNotExercisedExitsTwo: a provider whose implemented paths no scenario reached is not PASSED: the text
// verdict says NOT DECIDED and the command exits 2 ("the kit could not decide"); skipping those checks with a
// reason in [tool.astrabox] skip makes them reasoned skips and the run passes.
func TestNotExercisedExitsTwo(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python")
	}
	// src_layout's callbacks finish before any scenario's cancellation can meet them, so GEN-CANCEL-CLEAN
	// cannot be decided for it (its expect.json says so).
	src := repoPath("testdata/providers/correct/src_layout")
	code, stdout, stderr := run(t, "conformance", "run", "--project", src, "--python", "python3")
	if code != ExitUndecided || strings.Contains(stdout, "PASSED") || !strings.Contains(stdout, "NOT DECIDED") ||
		!strings.Contains(stderr, "could not decide: 1 check(s) not exercised (GEN-CANCEL-CLEAN)") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}

	// The same provider, with that check skipped for a reason.
	dir := t.TempDir()
	err := filepath.Walk(src, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if info.IsDir() {
			return os.MkdirAll(filepath.Join(dir, rel), 0o755)
		}
		body, err := os.ReadFile(p)
		if err == nil && rel == "pyproject.toml" {
			body = append(body, []byte("\n[tool.astrabox.skip]\nGEN-CANCEL-CLEAN = \"reviewed by hand\"\n")...)
		}
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, rel), body, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = run(t, "conformance", "run", "--project", dir, "--python", "python3")
	if code != ExitOK || !strings.Contains(stdout, "PASSED") || !strings.Contains(stdout, "reviewed by hand") {
		t.Fatalf("with reasoned skips: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
}
