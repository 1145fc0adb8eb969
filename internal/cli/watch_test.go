package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/astrabox-dev/astrabox/internal/report"
)

// watchProject writes a small provider project: pyproject.toml naming src/acme as the code root.
func watchProject(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"pyproject.toml":                                "[project]\nname = \"acme\"\nversion = \"1\"\n[project.entry-points.\"astrabox.providers.runtime_preparation\"]\nacme = \"acme.provider:Provider\"\n",
		"src/acme/__init__.py":                          "",
		"src/acme/provider.py":                          "class Provider: pass\n",
		"src/acme/__pycache__/provider.cpython-311.pyc": "x",
		"README.md":                                     "docs\n",
	}
	for name, text := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestWatchSeesCodeAndSettingsChanges: a watch stamps the code roots' *.py files and the settings files,
// and reports an edit, a new file and a removed one, but not a README or a cache file.
func TestWatchSeesCodeAndSettingsChanges(t *testing.T) {
	dir := watchProject(t)
	ws, err := watchFiles(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	before := ws.snapshot()
	if len(before) != 3 {
		t.Fatalf("watching %v, want pyproject.toml and the two .py files", before)
	}
	if got := changedFiles(before, ws.snapshot()); len(got) != 0 {
		t.Fatalf("nothing changed, but %v", got)
	}
	later := time.Now().Add(2 * time.Second)
	touch := func(name string) {
		if err := os.Chtimes(filepath.Join(dir, name), later, later); err != nil {
			t.Fatal(err)
		}
	}
	touch("README.md")
	touch("src/acme/__pycache__/provider.cpython-311.pyc")
	if got := changedFiles(before, ws.snapshot()); len(got) != 0 {
		t.Fatalf("a README or cache change counted: %v", got)
	}
	touch("src/acme/provider.py")
	touch("pyproject.toml")
	if err := os.WriteFile(filepath.Join(dir, "src/acme/extra.py"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "src/acme/__init__.py")); err != nil {
		t.Fatal(err)
	}
	got := changedFiles(before, ws.snapshot())
	want := []string{"pyproject.toml", "src/acme/__init__.py", "src/acme/extra.py", "src/acme/provider.py"}
	if len(got) != len(want) {
		t.Fatalf("changed %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != filepath.Join(dir, want[i]) {
			t.Errorf("changed[%d] = %s, want %s", i, got[i], want[i])
		}
	}
}

// TestWaitForChangeReturnsOnAnEditOrTheEnd: the wait ends with what changed, or with nil when the context
// ends first.
func TestWaitForChangeReturnsOnAnEditOrTheEnd(t *testing.T) {
	dir := watchProject(t)
	ws, err := watchFiles(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	before := ws.snapshot()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if got := waitForChange(ctx, ws, before, time.Millisecond); got != nil {
		t.Fatalf("an ended context returned %v", got)
	}
	if err := os.WriteFile(filepath.Join(dir, "src/acme/provider.py"), []byte("class Provider:\n    x = 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel = context.WithTimeout(context.Background(), time.Minute) // only to prevent a hang
	defer cancel()
	if got := waitForChange(ctx, ws, before, time.Millisecond); len(got) != 1 || !strings.HasSuffix(got[0], "provider.py") {
		t.Fatalf("after an edit: %v", got)
	}
}

func TestVerdictChanges(t *testing.T) {
	before := map[string]report.Status{"TURN-IDEMPOTENT": report.StatusPassed, "LEAK-LOG": report.StatusPassed, "PLAN-STABLE": report.StatusFailed}
	after := map[string]report.Status{"TURN-IDEMPOTENT": report.StatusFailed, "LEAK-LOG": report.StatusPassed, "SESSION-CLI-PROBE": report.StatusPassed}
	var b bytes.Buffer
	writeVerdictChanges(&b, before, after)
	want := "watch: 3 verdict(s) changed since the previous run:\n" +
		"  PLAN-STABLE: failed -> not judged\n" +
		"  SESSION-CLI-PROBE: passed (not judged before)\n" +
		"  TURN-IDEMPOTENT: passed -> failed\n"
	if b.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
	}
	b.Reset()
	writeVerdictChanges(&b, after, after)
	if b.String() != "watch: no verdict changed since the previous run\n" {
		t.Errorf("no change: %q", b.String())
	}
}

func TestWatchFlag(t *testing.T) {
	var got *RunOptions
	build := func(f *Factory) *cobra.Command {
		return NewCmdConformanceRun(f, func(o *RunOptions) error { got = o; return nil })
	}
	if err, _, _ := execute(t, build, "--watch", "p"); err != nil || !got.Watch || got.Project != "p" {
		t.Fatalf("--watch: err %v, options %+v", err, got)
	}
	if err, _, _ := execute(t, build, "p"); err != nil || got.Watch {
		t.Fatalf("default: err %v, watch %v", err, got.Watch)
	}
}
