package harness

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// pyTestsVersions are the CPython minor versions the embedded SDK and runner must support.
var pyTestsVersions = []string{"3.9", "3.10", "3.11", "3.12", "3.13"}

// pyTestsInterpreter finds a CPython interpreter of the given minor version: a pyenv install under
// /root/.pyenv/versions first, then pythonX.Y on PATH. It returns "" when there is none.
func pyTestsInterpreter(version string) string {
	matches, _ := filepath.Glob(filepath.Join("/root/.pyenv/versions", version+".*", "bin", "python3"))
	sort.Strings(matches)
	for _, m := range matches {
		if info, err := os.Stat(m); err == nil && !info.IsDir() {
			return m
		}
	}
	if p, err := exec.LookPath("python" + version); err == nil {
		return p
	}
	return ""
}

// TestPythonSuites runs the Python unittest suites in pytests/ (the SDK's seams and the harness runner
// spoken to over real pipes) under every supported CPython that is installed.
func TestPythonSuites(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python (skipped under -short)")
	}
	skipShort(t)
	dir, err := filepath.Abs("pytests")
	if err != nil {
		t.Fatalf("locate pytests: %v", err)
	}
	for _, version := range pyTestsVersions {
		t.Run("python"+version, func(t *testing.T) {
			python := pyTestsInterpreter(version)
			if python == "" {
				t.Skipf("CPython %s is not installed (looked under /root/.pyenv/versions and for python%s on PATH)", version, version)
			}
			out, err := pyTestsRun(t, python, dir, version)
			if err != nil {
				t.Fatalf("python unittest under %s (%s) failed: %v\n%s", version, python, err, out)
			}
			if !strings.Contains(out, "\nOK") {
				t.Fatalf("python unittest under %s did not report OK:\n%s", version, out)
			}
		})
	}
}

func pyTestsRun(t *testing.T, python, dir, version string) (string, error) {
	t.Helper()
	// The deadline only stops a hung run; the suites take a few seconds.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, "-B", "-m", "unittest", "discover", "-s", dir, "-t", dir, "-p", "test_*.py")
	cmd.Dir = dir
	env := []string{"PYTHONDONTWRITEBYTECODE=1"}
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "PYTHON") || strings.HasPrefix(kv, "ASTRABOX_") {
			continue
		}
		env = append(env, kv)
	}
	cmd.Env = env
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		return string(out), fmt.Errorf("still running after the hang guard under %s: %w", version, ctx.Err())
	}
	return string(out), err
}
