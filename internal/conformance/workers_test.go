package conformance

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/astrabox-dev/astrabox/internal/harness"
)

// TestRunAllPreparesNoStageItCannotUse: the default suite's slots prepare a replica set for a next scenario
// only while one may come. After RunAll no slot holds a prepared stage (each would be forked replicas no
// scenario takes), and a later Run, whose sequel is unknown, prepares one again.
func TestRunAllPreparesNoStageItCannotUse(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 180*time.Second)
	defer cancel()
	o, env := minimalEnv(ctx, t, 2)
	scenarios, err := env.suite(o)
	if err != nil {
		t.Fatal(err)
	}
	if len(scenarios) <= 2 {
		t.Fatalf("the default suite has %d scenarios; the test needs more than its two slots", len(scenarios))
	}
	w, err := env.NewWorkers(ctx, 2, maxReplicas(scenarios, 3))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	hists, err := w.RunAll(ctx, scenarios)
	if err != nil || len(hists) != len(scenarios) {
		t.Fatalf("RunAll: %d histories, %v", len(hists), err)
	}
	for i, s := range w.all {
		if s.next != nil {
			t.Errorf("slot %d holds a stage after the last scenario", i)
		}
	}
	if w.staged != 0 || w.unstarted != -1 {
		t.Errorf("after RunAll: %d stages counted, %d scenarios unstarted; want 0 and -1", w.staged, w.unstarted)
	}
	if _, err := w.Run(ctx, scenarios[0]); err != nil {
		t.Fatal(err)
	}
	prepared := 0
	for _, s := range w.all {
		if s.next != nil {
			prepared++
		}
	}
	if prepared != 1 || w.staged != 1 {
		t.Errorf("after a lone Run: %d slots hold a stage (%d counted), want 1", prepared, w.staged)
	}
}

// resolveInspect resolves the project o names and inspects its provider, failing the test on either error.
func resolveInspect(ctx context.Context, t *testing.T, o Options) (*Target, *harness.LoadInfo) {
	t.Helper()
	tg, err := Resolve(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	info, _, err := Inspect(ctx, tg)
	if err != nil || info == nil {
		t.Fatalf("inspect: %v", err)
	}
	return tg, info
}

// minimalEnv resolves and inspects the correct/minimal fixture with jobs and returns its options and a
// seed-1 environment, for tests that drive Workers by hand.
func minimalEnv(ctx context.Context, t *testing.T, jobs int) (Options, *Env) {
	t.Helper()
	abs, _ := filepath.Abs(filepath.Join("..", "..", "testdata", "providers", "correct", "minimal"))
	o := Options{Project: abs, Python: "python3", Jobs: jobs, Getenv: pathOnly}
	tg, info := resolveInspect(ctx, t, o)
	env, err := NewEnv(tg, info, 1)
	if err != nil {
		t.Fatal(err)
	}
	return o, env
}
