package explore

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/astrabox-dev/astrabox/internal/testutil"
)

// exploreSample is the correct provider `make test` explores.
const exploreSample = "minimal"

// TestCorrectProvidersSurviveExploration explores generated scenarios against every correct provider and
// requires no failure and no flaky result: the kit must never cry wolf. `make test` explores 40 scenarios of
// exploreSample only; the long lane (`make long`) explores 40 per provider, and `make explore` 500
// (ASTRABOX_EXPLORE_N=500).
func TestCorrectProvidersSurviveExploration(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python (skipped under -short)")
	}
	n := 40
	if v := os.Getenv("ASTRABOX_EXPLORE_N"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			t.Fatalf("ASTRABOX_EXPLORE_N=%q is not a positive number", v)
		}
	}
	dirs, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "providers", "correct", "*"))
	dirs = append(dirs, filepath.Join("..", "..", "examples", "providers", "reference"))
	for _, dir := range dirs {
		dir := dir
		t.Run(filepath.Base(dir), func(t *testing.T) {
			if filepath.Base(dir) != exploreSample {
				testutil.LongLane(t, "exploration of every correct provider")
			}
			if strings.HasPrefix(filepath.Base(dir), "lib-") {
				// The real-client fixtures need Debian's interpreter and their credentials
				// (internal/conformance's TestRealClientFixtures runs them).
				t.Skip("a real-client fixture")
			}
			if filepath.Base(dir) == "requests_client" {
				if err := exec.Command("python3", "-c", "import requests").Run(); err != nil {
					t.Skip("python3 has no requests module")
				}
			}
			env, w := setup(t, dir, 11)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
			defer cancel()
			res, err := Explore(ctx, env, w, Options{N: n, Seed: 11, Jobs: 2, FailuresDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Errors) > 0 {
				t.Errorf("scenarios the kit could not run: %v", res.Errors)
			}
			for _, f := range res.Failures {
				state := "failed"
				if f.Flaky {
					state = "flaky (" + f.Differed + ")"
				}
				t.Errorf("%s %s in scenario %d: %s\n  shrunk: %v", f.Check, state, f.Index, f.Message, f.Shrunk)
			}
			if res.Scenarios != n {
				t.Errorf("explored %d scenarios, want %d", res.Scenarios, n)
			}
		})
	}
}
