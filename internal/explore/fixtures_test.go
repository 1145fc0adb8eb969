package explore

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/astrabox-dev/astrabox/internal/conformance"
	"github.com/astrabox-dev/astrabox/internal/simulate"
	"github.com/astrabox-dev/astrabox/internal/testutil"
)

// setup resolves a fixture project and starts warm workers for it.
func setup(t *testing.T, dir string, seed int64) (*conformance.Env, *conformance.Workers) {
	t.Helper()
	ctx := context.Background()
	abs, _ := filepath.Abs(dir)
	tg, err := conformance.Resolve(ctx, conformance.Options{Project: abs, Python: "python3", Getenv: func(k string) string {
		if k == "PATH" {
			return os.Getenv("PATH")
		}
		return ""
	}})
	if err != nil {
		t.Fatal(err)
	}
	info, _, err := conformance.Inspect(ctx, tg)
	if err != nil || info == nil {
		t.Fatalf("inspect: %v", err)
	}
	// As a conformance run does: the project's declared services and egress control (a provider that talks
	// to its own service cannot settle without them, and GEN-SETTLES says so).
	svcs, err := simulate.StartServices(ctx, tg.Settings.Services, tg.Settings.Egress)
	if err != nil {
		t.Fatal(err)
	}
	tg.Services = svcs
	t.Cleanup(func() { svcs.Close() })
	env, err := conformance.NewEnv(tg, info, seed)
	if err != nil {
		t.Fatal(err)
	}
	w, err := env.NewWorkers(ctx, 2, 3)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	return env, w
}

// TestExploreFindsOrderDependentBugs proves that exploration finds, from a fixed seed, each broken fixture
// whose bug needs a particular order, shrinks it to a handful of steps, and that the saved file replays the
// failure. `make test` explores the first case; the long lane every case.
func TestExploreFindsOrderDependentBugs(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python (skipped under -short)")
	}
	cases := []struct{ fixture, check string }{
		{"turn-idempotent", "TURN-IDEMPOTENT"},       // a retry must land on another replica
		{"leak-cross-session", "LEAK-CROSS-SESSION"}, // two principals' sessions on one agent
		{"recover-truth", "RECOVER-TRUTH"},           // host loss with a held write, recover, release
	}
	for i, c := range cases {
		c := c
		t.Run(c.check, func(t *testing.T) {
			if i > 0 {
				testutil.LongLane(t, "exploration of every order-dependent fixture")
			}
			env, w := setup(t, filepath.Join("..", "..", "testdata", "providers", "broken", c.fixture), 5)
			dir := t.TempDir()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			// Up to 60 scenarios, judged until the first that fails (the one shrunk and saved either way): the
			// ones after it would only be judged and dropped.
			res, err := Explore(ctx, env, w, Options{N: 60, Seed: 5, Jobs: 2, Checks: []string{c.check}, FailuresDir: dir, ShrinkBudget: 40, StopAfterFailure: true})
			if err != nil {
				t.Fatal(err)
			}
			var fl *Failure
			for i := range res.Failures {
				if res.Failures[i].Check == c.check {
					fl = &res.Failures[i]
				}
			}
			if fl == nil {
				t.Fatalf("60 explored scenarios did not find %s (errors: %v)", c.check, res.Errors)
			}
			if fl.Flaky {
				t.Fatalf("the failure was judged flaky: %s", fl.Differed)
			}
			if len(fl.Shrunk) > 6 {
				t.Errorf("shrunk only to %d steps: %v", len(fl.Shrunk), fl.Shrunk)
			}
			sc, err := simulate.LoadScenario(fl.File)
			if err != nil {
				t.Fatalf("saved failure does not load: %v", err)
			}
			h, err := w.Run(ctx, sc)
			if err != nil {
				t.Fatal(err)
			}
			ids, _ := conformance.Failing(env.Evidence([]*simulate.History{h}), []string{c.check}, nil, nil)
			if len(ids) != 1 || ids[0] != c.check {
				t.Fatalf("replaying %s gave %v, want %s", fl.File, ids, c.check)
			}
			last, checks, err := LastFailed(dir)
			if err != nil || len(last) != 1 || len(checks) != 1 || checks[0] != c.check {
				t.Fatalf("last-failed: %v (%d scenarios, checks %v)", err, len(last), checks)
			}
		})
	}
}
