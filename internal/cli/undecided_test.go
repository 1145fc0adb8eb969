package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNotExercisedExitsTwo: a provider whose implemented path no scenario reached is not PASSED: the text
// verdict says NOT DECIDED and the command exits 2 ("the kit could not decide"); skipping that check with a
// reason in [tool.astrabox] skip makes it a reasoned skip and the run passes.
func TestNotExercisedExitsTwo(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python")
	}
	code, stdout, stderr := run(t, "conformance", "run", "--project", repoPath("testdata/providers/correct/own_action_ids"), "--python", "python3")
	if code != ExitUndecided || strings.Contains(stdout, "PASSED") || !strings.Contains(stdout, "NOT DECIDED") ||
		!strings.Contains(stdout, "UA-IDEMPOTENT") || !strings.Contains(stderr, "could not decide: 1 check(s) not exercised (UA-IDEMPOTENT)") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}

	// The same provider, with the check skipped for a reason.
	dir := t.TempDir()
	src := repoPath("testdata/providers/correct/own_action_ids")
	data, err := os.ReadFile(filepath.Join(src, "pyproject.toml"))
	if err != nil {
		t.Fatal(err)
	}
	streams := repoPath("testdata/providers/correct/asyncio_streams")
	toml := strings.Replace(string(data), `python-path = ["../asyncio_streams"]`, `python-path = ["`+streams+`"]`+"\nskip = { UA-IDEMPOTENT = \"our operations are read-only\" }", 1)
	if toml == string(data) {
		t.Fatal("the fixture's python-path line changed; update this test")
	}
	copyFile(t, filepath.Join(src, "streamline_consent.py"), filepath.Join(dir, "streamline_consent.py"))
	if err := os.WriteFile(filepath.Join(dir, "pyproject.toml"), []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = run(t, "conformance", "run", "--project", dir, "--python", "python3")
	if code != ExitOK || !strings.Contains(stdout, "PASSED") || !strings.Contains(stdout, "our operations are read-only") {
		t.Fatalf("with a reasoned skip: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, 0o644); err != nil {
		t.Fatal(err)
	}
}
