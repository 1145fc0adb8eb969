package bench

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"testing"

	"github.com/astrabox-dev/astrabox/internal/conformance"
	"github.com/astrabox-dev/astrabox/internal/explore"
)

// guidedFixtures are the broken fixtures whose bug needs a particular order or fault, with the check that
// finds it.
var guidedFixtures = []struct{ fixture, check string }{
	{"turn-idempotent", "TURN-IDEMPOTENT"},       // a retry must land on another replica
	{"leak-cross-session", "LEAK-CROSS-SESSION"}, // two principals' sessions on one agent
	{"recover-truth", "RECOVER-TRUTH"},           // host loss with a held write, recover, release
}

func medianInt(xs []int) float64 {
	s := append([]int(nil), xs...)
	sort.Ints(s)
	if len(s)%2 == 1 {
		return float64(s[len(s)/2])
	}
	return float64(s[len(s)/2-1]+s[len(s)/2]) / 2
}

// BenchmarkGuidedVsBlind explores each fixture whose bug needs a particular order or fault, blind and guided
// by coverage (from an empty corpus), from the same seeds, on CPython 3.12 (which measures coverage by
// default), and reports the median number of scenarios judged up to the first failure (N+1 when none
// failed within N) and the median lines and branch directions reached after N scenarios.
// ASTRABOX_BENCH_GUIDED_N sets N (default 40) and ASTRABOX_BENCH_GUIDED_SEEDS the number of seeds (default 3).
func BenchmarkGuidedVsBlind(b *testing.B) {
	py := "/root/.pyenv/versions/3.12.1/bin/python3"
	if _, err := os.Stat(py); err != nil {
		b.Skipf("%s not installed", py)
	}
	n, seeds := envInt("ASTRABOX_BENCH_GUIDED_N", 40), envInt("ASTRABOX_BENCH_GUIDED_SEEDS", 3)
	for _, fx := range guidedFixtures {
		b.Run(fx.check, func(b *testing.B) {
			ctx := context.Background()
			project, _ := filepath.Abs(filepath.Join("..", "..", "testdata", "providers", "broken", fx.fixture))
			t, err := conformance.Resolve(ctx, conformance.Options{Project: project, Python: py, Getenv: os.Getenv})
			if err != nil {
				b.Fatal(err)
			}
			info, _, err := conformance.Inspect(ctx, t)
			if err != nil || info == nil {
				b.Fatalf("inspect: %v", err)
			}
			for i := 0; i < b.N; i++ {
				var first, reach [2][]int
				for s := 1; s <= seeds; s++ {
					env, err := conformance.NewEnv(t, info, int64(s))
					if err != nil {
						b.Fatal(err)
					}
					w, err := env.NewWorkers(ctx, 2, 3)
					if err != nil {
						b.Fatal(err)
					}
					for k, blind := range []bool{true, false} {
						res, err := explore.Explore(ctx, env, w, explore.Options{N: n, Seed: int64(s), Jobs: 2, Checks: []string{fx.check},
							Blind: blind, Fresh: true, CorpusDir: b.TempDir(), FailuresDir: b.TempDir(), ShrinkBudget: 1, Replays: 1})
						if err != nil {
							b.Fatal(err)
						}
						f := res.FirstFailure
						if f == 0 {
							f = n + 1
						}
						first[k] = append(first[k], f)
						reach[k] = append(reach[k], res.Reached)
						b.Logf("%s seed %d blind=%v: first failure after %d scenarios, %d reached", fx.check, s, blind, f, res.Reached)
					}
					w.Close()
				}
				b.ReportMetric(medianInt(first[0]), "scenarios-blind")
				b.ReportMetric(medianInt(first[1]), "scenarios-guided")
				b.ReportMetric(medianInt(reach[0]), "reached-blind")
				b.ReportMetric(medianInt(reach[1]), "reached-guided")
			}
		})
	}
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}
