package conformance

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeProcesses lists the pids whose command line names marker.
func fakeProcesses(t *testing.T, marker string) []string {
	t.Helper()
	var out []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		cmd, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(cmd), marker) {
			out = append(out, e.Name())
		}
	}
	return out
}

func copyFixture(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.Walk(src, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if info.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// TestServiceFakeLifecycle: a fake that cannot start ends the run with exit 2 and its output; after a run,
// finished or interrupted, no fake process is left.
func TestServiceFakeLifecycle(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python")
	}
	src, _ := filepath.Abs("../../testdata/providers/correct/oauth_fake")
	proj := copyFixture(t, src)
	marker := filepath.Join(proj, "tests", "fakes", "identity.py")
	pyproject := filepath.Join(proj, "pyproject.toml")
	data, _ := os.ReadFile(pyproject)
	absolute := strings.Replace(string(data), "tests/fakes/identity.py", marker, 1)
	if err := os.WriteFile(pyproject, []byte(absolute), 0o644); err != nil {
		t.Fatal(err)
	}

	rep, err := runProject(t, proj)
	if err != nil || rep.HasFailures() {
		t.Fatalf("run: %v %+v", err, rep)
	}
	if left := fakeProcesses(t, marker); len(left) > 0 {
		t.Fatalf("fake processes left after the run: %v", left)
	}

	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for i := 0; i < 400 && len(fakeProcesses(t, marker)) == 0; i++ {
			time.Sleep(25 * time.Millisecond)
		}
		cancel()
	}()
	_, _ = Run(ctx, Options{Project: proj, Python: "python3", Getenv: pathOnly})
	if left := fakeProcesses(t, marker); len(left) > 0 {
		t.Fatalf("fake processes left after an interrupted run: %v", left)
	}

	broken := strings.Replace(absolute, "--port {port}", "--port {port} --crash", 1)
	broken = strings.Replace(broken, "exec python3 ", "echo identity fake: no signing key configured >&2; exit 4; python3 ", 1)
	if err := os.WriteFile(pyproject, []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = runProject(t, proj)
	var u *UndecidedError
	if !errors.As(err, &u) || !strings.Contains(err.Error(), "no signing key configured") || !strings.Contains(err.Error(), "service identity") {
		t.Fatalf("a fake that cannot start: %v", err)
	}
}
