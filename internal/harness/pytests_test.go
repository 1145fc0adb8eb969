package harness

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/astrabox-dev/astrabox/internal/egress"
	"github.com/astrabox-dev/astrabox/internal/testutil"
)

// pyTestsVersions are the CPython minor versions the embedded SDK and runner must support.
var pyTestsVersions = []string{"3.9", "3.10", "3.11", "3.12", "3.13"}

// pyTestsSample is the version `make test` runs the suites under: the python3 the kit's own tests use (the
// interpreter every other live test runs), which proves the suites and what they test. What differs between
// versions is the long lane's (`make long`, which CI runs, runs every version); in `make test`,
// TestHarnessPythonVersions still loads the harness, plans and calls a session, directly and through a fork
// server, on every installed version from 3.9 to 3.13. Each suite is about 15 s of CPU.
var pyTestsSample = map[string]bool{"3.11": true}

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
// spoken to over real pipes) under every supported CPython that is installed (`make test`: pyTestsSample).
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
			if !pyTestsSample[version] {
				testutil.LongLane(t, "the Python suites under every supported CPython")
			}
			// The suites spend most of their time waiting on the processes they start (ports and files
			// are their own), so the versions run side by side.
			t.Parallel()
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
			lines := strings.Split(strings.TrimSpace(out), "\n")
			t.Logf("%s: %s", version, lines[len(lines)-1]) // "OK (skipped=N)" shows what did not run here
		})
	}
}

func pyTestsRun(t *testing.T, python, dir, version string) (string, error) {
	t.Helper()
	// The deadline only stops a hung run, in time to show its output before go test's own timeout ends the
	// binary. It is that timeout's, not a fixed one: a suite takes about 15 s of CPU, but on a loaded machine
	// (a load of 25 on two cores) each took more than the three minutes a fixed guard allowed.
	deadline := time.Now().Add(10 * time.Minute)
	if d, ok := t.Deadline(); ok {
		deadline = d.Add(-30 * time.Second)
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
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
	if tlsDir, err := pyTestsTLS(t); err == nil {
		env = append(env, "HARNESS_TLS_DIR="+tlsDir)
	} else {
		t.Logf("no certificate for the TLS tests: %v", err)
	}
	cmd.Env = env
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		return string(out), fmt.Errorf("still running after the hang guard under %s: %w", version, ctx.Err())
	}
	return string(out), err
}

// pyTestsTLS writes a certificate authority (ca.pem) and a leaf for localhost (cert.pem, key.pem) into a
// temporary directory, for the suites' TLS tests (test_sends.py).
func pyTestsTLS(t *testing.T) (string, error) {
	t.Helper()
	ca, err := egress.NewCA()
	if err != nil {
		return "", err
	}
	leaf, err := ca.Leaf("localhost")
	if err != nil {
		return "", err
	}
	key, err := x509.MarshalPKCS8PrivateKey(leaf.PrivateKey)
	if err != nil {
		return "", fmt.Errorf("encode the test key: %w", err)
	}
	dir := t.TempDir()
	files := map[string][]byte{
		"ca.pem":   ca.PEM(),
		"cert.pem": pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leaf.Certificate[0]}),
		"key.pem":  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: key}),
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return "", fmt.Errorf("write %s: %w", name, err)
		}
	}
	return dir, nil
}
