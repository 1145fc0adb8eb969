package simulate

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/astrabox-dev/astrabox/internal/harness"
)

// TestProcessesEscapeesGone: a simulation of a provider whose prepare_session leaves a descendant that
// double-forked, called setsid and executed with an empty environment leaves none of them running.
func TestProcessesEscapeesGone(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python; skipped under -short")
	}
	dir, _ := filepath.Abs(filepath.Join("..", "harness", "testdata", "hostile", "escape"))
	record := filepath.Join(t.TempDir(), "escaped")
	t.Setenv("ASTRABOX_TEST_RECORD", record)
	sc, err := LoadScenario(filepath.Join("testdata", "smoke.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	o := Options{Python: "python3", Config: testConfig(), Limits: harness.DefaultLimits(),
		ProjectDir: dir, Target: "hostile_escape:Provider", Paths: []string{filepath.Join(dir, "src")}}
	if _, err := Run(ctx, sc, o); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(record)
	pids := strings.Fields(string(b))
	if err != nil || len(pids) == 0 {
		t.Fatalf("no descendant ever escaped (the fixture did not run): %v", err)
	}
	for _, pid := range pids {
		if st, err := os.ReadFile("/proc/" + pid + "/stat"); err == nil && !strings.Contains(string(st), ") Z ") {
			t.Errorf("escaped descendant %s still runs after the simulation", pid)
		}
	}
}
