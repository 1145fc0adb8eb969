package conformance

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestProcessesEscapeesGone: a provider whose every prepare_session leaves a descendant that double-forked,
// called setsid and executed with an empty environment (no replica token, no process group of the
// replica's) is run through the whole suite; afterwards every such descendant is gone, and nothing is left
// below the kit.
func TestProcessesEscapeesGone(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python; skipped under -short")
	}
	project, _ := filepath.Abs(filepath.Join("..", "harness", "testdata", "hostile", "escape"))
	record := filepath.Join(t.TempDir(), "escaped")
	t.Setenv("ASTRABOX_TEST_RECORD", record)
	o := Options{Project: project, Python: "python3", Getenv: pathOnly}
	if _, err := Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(record)
	if err != nil {
		t.Fatalf("no descendant ever escaped (the fixture did not run): %v", err)
	}
	pids := strings.Fields(string(b))
	if len(pids) == 0 {
		t.Fatal("no descendant ever escaped")
	}
	for _, s := range pids {
		if st, err := os.ReadFile("/proc/" + s + "/stat"); err == nil && !strings.Contains(string(st), ") Z ") {
			pid, _ := strconv.Atoi(s)
			t.Errorf("escaped descendant %d still runs after the run", pid)
		}
	}
	t.Logf("%d descendants escaped during the run; none is left", len(pids))
	assertNoDescendants(t, "after a run of escaping providers")
}
