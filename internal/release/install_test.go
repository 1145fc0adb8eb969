package release

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// repoRoot is the repository root, two levels above this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// runIn runs a command in dir with env added to ours, failing the test with its output when it fails.
func runIn(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestWheelInstallsAndRuns is `make dist` for this machine's Linux platform, then what a provider author does
// with its wheel: a fresh venv, `pip install --no-index` of the wheel (no PyPI), and the installed astrabox
// (on PATH as the venv puts it there) runs the reference provider green. The checksums file verifies with
// sha256sum, as a download would be verified.
func TestWheelInstallsAndRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the kit, a venv and runs Python (skipped under -short)")
	}
	if runtime.GOOS != "linux" {
		t.Skip("installs the Linux wheel")
	}
	root, out := repoRoot(t), t.TempDir()
	runIn(t, root, nil, "go", "run", "./internal/tools/dist", "-version", "0.0.0.dev0",
		"-targets", "linux/"+runtime.GOARCH, "-out", out)
	if _, err := exec.LookPath("sha256sum"); err == nil {
		runIn(t, out, nil, "sha256sum", "-c", ChecksumsName)
	}
	wheel, err := WheelName("0.0.0.dev0", Target{"linux", runtime.GOARCH})
	if err != nil {
		t.Fatal(err)
	}
	venv := filepath.Join(t.TempDir(), "venv")
	runIn(t, out, nil, "python3", "-m", "venv", venv)
	bin := filepath.Join(venv, "bin")
	env := []string{"PIP_DISABLE_PIP_VERSION_CHECK=1", "PIP_NO_INPUT=1"}
	runIn(t, out, env, filepath.Join(bin, "pip"), "install", "--no-index", filepath.Join(out, wheel))
	kit := filepath.Join(bin, "astrabox")
	if st, err := os.Stat(kit); err != nil || st.Mode()&0o111 == 0 {
		t.Fatalf("pip did not put an executable astrabox in %s: %v", bin, err)
	}
	// As an activated venv: its bin first on PATH, VIRTUAL_ENV set.
	active := append(env, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "VIRTUAL_ENV="+venv)
	// Through a shell, so that the command is found on the venv's PATH (exec.Command would look it up on the
	// test's own PATH).
	if v := runIn(t, out, active, "/bin/sh", "-c", "command -v astrabox && astrabox --version"); !strings.Contains(v, bin) || !strings.Contains(v, "astrabox") {
		t.Fatalf("astrabox --version: %q", v)
	}
	if p := runIn(t, out, active, filepath.Join(bin, "python"), "-c", "import astrabox_kit; print(astrabox_kit.find_astrabox_bin())"); strings.TrimSpace(p) != kit {
		t.Errorf("find_astrabox_bin: %q, want %s", p, kit)
	}
	project := filepath.Join(root, "examples", "providers", "reference")
	report := runIn(t, out, active, kit, "conformance", "run", "--project", project, "--color", "never")
	if !strings.Contains(report, "passed") {
		t.Errorf("the reference provider's run did not say passed:\n%s", report)
	}
}
