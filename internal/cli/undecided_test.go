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
	src := repoPath("testdata/providers/correct/http_keepalive")
	code, stdout, stderr := run(t, "conformance", "run", "--project", src, "--python", "python3")
	if code != ExitUndecided || strings.Contains(stdout, "PASSED") || !strings.Contains(stdout, "NOT DECIDED") ||
		!strings.Contains(stderr, "could not decide: 2 check(s) not exercised (GEN-CANCEL-CLEAN, LEAK-ERROR)") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}

	// The same provider, with both checks skipped for a reason.
	dir := t.TempDir()
	data, err := os.ReadFile(filepath.Join(src, "pyproject.toml"))
	if err != nil {
		t.Fatal(err)
	}
	toml := string(data) + "\n[tool.astrabox.skip]\nGEN-CANCEL-CLEAN = \"prepare_session is never cancelled in production\"\nLEAK-ERROR = \"reviewed by hand\"\n"
	py, err := os.ReadFile(filepath.Join(src, "ledgerline.py"))
	if err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string][]byte{"pyproject.toml": []byte(toml), "ledgerline.py": py} {
		if err := os.WriteFile(filepath.Join(dir, name), body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	code, stdout, stderr = run(t, "conformance", "run", "--project", dir, "--python", "python3")
	if code != ExitOK || !strings.Contains(stdout, "PASSED") || !strings.Contains(stdout, "reviewed by hand") {
		t.Fatalf("with reasoned skips: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
}
