package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSimulateStartsDeclaredServices plays `simulate claim` on the vault-oauth example, whose provider calls
// its own Vault and OAuth services at their production URLs: the run starts their fakes as `conformance
// run` does, so the provider's requests reach them and the timeline names the service of each.
func TestSimulateStartsDeclaredServices(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python and the example's fakes")
	}
	code, stdout, stderr := run(t, "simulate", "claim", "--project", repoPath("examples/providers/vault-oauth"))
	if code != ExitOK {
		t.Fatalf("exit %d, want 0\n%s\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"declared services (oauth, vault)", "POST   /oauth2/token (r2#2) -> 200 via oauth", "-> 404 via vault", "no check fails on this scenario"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("timeline lacks %q:\n%s", want, stdout)
		}
	}
	if strings.Contains(stdout, "egress:") {
		t.Errorf("a provider that calls only declared services shows egress attempts:\n%s", stdout)
	}
}

// TestSimulateShowsRefusedEgress plays the vault-oauth example with its OAuth service declared at another
// host: the provider's token request goes to a destination that is no longer declared, egress control
// refuses it, and the timeline shows the refusal with the replica, the callback and the host.
func TestSimulateShowsRefusedEgress(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python and the example's fakes")
	}
	project := copyTree(t, repoPath("examples/providers/vault-oauth"))
	manifest := filepath.Join(project, "pyproject.toml")
	raw, err := os.ReadFile(manifest)
	if err != nil {
		t.Fatal(err)
	}
	moved := strings.Replace(string(raw), `urls = ["https://login.fabrikam.example"]`, `urls = ["https://login-moved.fabrikam.example"]`, 1)
	if moved == string(raw) {
		t.Fatal("the example's pyproject.toml no longer declares https://login.fabrikam.example")
	}
	if err := os.WriteFile(manifest, []byte(moved), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stdout, stderr := run(t, "simulate", "claim", "--project", project)
	if !strings.Contains(stdout, "egress: ") || !strings.Contains(stdout, "login.fabrikam.example:443") ||
		!strings.Contains(stdout, "prepare_session) refused") {
		t.Fatalf("the timeline does not show the refused connection to login.fabrikam.example:\n%s\n%s", stdout, stderr)
	}
}

// copyTree copies a directory into a temporary one and returns the copy.
func copyTree(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			if d.Name() == "__pycache__" {
				return filepath.SkipDir
			}
			return os.MkdirAll(target, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}
