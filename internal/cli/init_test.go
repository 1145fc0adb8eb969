package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestInitScaffoldsAProjectWhoseTestsPass(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the scaffolded project's tests in Python (skipped under -short)")
	}
	dir := filepath.Join(t.TempDir(), "Acme Tools")
	code, stdout, stderr := run(t, "init", dir)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if stdout != "" {
		t.Errorf("init printed data on stdout: %q", stdout)
	}
	for _, want := range []string{"created pyproject.toml", "created src/acme_tools_provider/provider.py",
		"created .github/workflows/astrabox.yml", "created .gitignore", `Provider "acme-tools"`, `PYTHONPATH="$(astrabox sdk path)" python3 -m unittest`} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	pyproject, err := os.ReadFile(filepath.Join(dir, "pyproject.toml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`[project.entry-points."astrabox.providers.runtime_preparation"]`,
		`acme-tools = "acme_tools_provider.provider:AcmeToolsProvider"`,
		"[tool.astrabox]",
	} {
		if !strings.Contains(string(pyproject), want) {
			t.Errorf("pyproject.toml lacks %q", want)
		}
	}
	cmd := exec.Command("python3", "-m", "unittest", "-v")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PYTHONPATH="+repoPath("internal/harness/python"), "PYTHONDONTWRITEBYTECODE=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "OK") {
		t.Fatalf("generated unit tests: %v\n%s", err, out)
	}
}

func TestInitFlags(t *testing.T) {
	dir := t.TempDir()
	code, _, stderr := run(t, "init", "--name", "deploy.tools", "--package", "deploytools", dir)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	src, err := os.ReadFile(filepath.Join(dir, "src", "deploytools", "provider.py"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(src), "class DeployToolsProvider(RuntimePreparationProvider):") ||
		!strings.Contains(string(src), `name = "deploy.tools"`) {
		t.Errorf("provider.py:\n%s", src)
	}
	pyproject, _ := os.ReadFile(filepath.Join(dir, "pyproject.toml"))
	if !strings.Contains(string(pyproject), `"deploy.tools" = "deploytools.provider:DeployToolsProvider"`) {
		t.Errorf("entry point not quoted for a dotted name:\n%s", pyproject)
	}
}

func TestInitRefusesToOverwrite(t *testing.T) {
	dir := t.TempDir()
	provider := filepath.Join(dir, "src", "tools_provider", "provider.py")
	if err := os.MkdirAll(filepath.Dir(provider), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(provider, []byte("# my work\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := run(t, "init", "--name", "tools", dir)
	if code != ExitUndecided {
		t.Fatalf("exit %d, want 2", code)
	}
	if !strings.Contains(stderr, provider) || !strings.Contains(stderr, "--force") {
		t.Errorf("error does not name the file and --force: %q", stderr)
	}
	if got, _ := os.ReadFile(provider); string(got) != "# my work\n" {
		t.Errorf("provider.py was overwritten")
	}
	if _, err := os.Stat(filepath.Join(dir, "pyproject.toml")); err == nil {
		t.Errorf("pyproject.toml was written despite the refusal")
	}

	code, _, stderr = run(t, "init", "--name", "tools", "--force", dir)
	if code != ExitOK {
		t.Fatalf("--force: exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, "replaced src/tools_provider/provider.py") || !strings.Contains(stderr, "created pyproject.toml") {
		t.Errorf("stderr:\n%s", stderr)
	}
	if got, _ := os.ReadFile(provider); !strings.Contains(string(got), "class ToolsProvider") {
		t.Errorf("provider.py not replaced with --force")
	}
}

func TestInitBadNamesAreUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"init", "--name", "Bad Name", t.TempDir()},
		{"init", "--package", "not-an-identifier", t.TempDir()},
		{"init", "a", "b"},
	} {
		code, _, stderr := run(t, args...)
		if code != ExitUndecided {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
		if args[1] == "--name" && !strings.Contains(stderr, `try "bad-name"`) {
			t.Errorf("%v: no suggestion in %q", args, stderr)
		}
	}
}

func TestInitHelpHasExamples(t *testing.T) {
	code, stdout, _ := run(t, "init", "--help")
	if code != ExitOK {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"astrabox init my-provider", "--force", "--package", `PYTHONPATH="$(astrabox sdk path)"`} {
		if !strings.Contains(stdout, want) {
			t.Errorf("help lacks %q", want)
		}
	}
}
