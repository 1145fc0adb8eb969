package bench

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/astrabox-dev/astrabox/internal/conformance"
	"github.com/astrabox-dev/astrabox/internal/explore"
	"github.com/astrabox-dev/astrabox/internal/harness"
)

// guidedFixtures are the broken fixtures whose bug needs a particular order or fault, with the check that
// finds it. The first three are found within a few scenarios by any method; the last four need several
// conditions in order (their expect.json says which).
var guidedFixtures = []struct{ fixture, check string }{
	{"turn-idempotent", "TURN-IDEMPOTENT"},                // a retry must land on another replica
	{"leak-cross-session", "LEAK-CROSS-SESSION"},          // two principals' sessions on one agent
	{"recover-truth", "RECOVER-TRUTH"},                    // host loss with a held write, recover, release
	{"leak-cross-session-reattach", "LEAK-CROSS-SESSION"}, // two principals' sessions on one replica, a reattachment there
	{"recover-truth-fenced-agent", "RECOVER-TRUTH"},       // two operations lost with held writes, both recovered on one replica, release
	{"ua-authority-read-cache", "UA-AUTHORITY"},           // a state read while granted, consent withdrawn, a turn on the replica that read
	{"recover-truth-superseded", "RECOVER-TRUTH"},         // a written record, a new version, a held write lost with its host, recover, release
}

// benchPython is the interpreter the guided benchmarks use: 3.12 measures coverage (with branches) by default.
const benchPython = "/root/.pyenv/versions/3.12.1/bin/python3"

func medianInt(xs []int) float64 {
	s := append([]int(nil), xs...)
	sort.Ints(s)
	if len(s)%2 == 1 {
		return float64(s[len(s)/2])
	}
	return float64(s[len(s)/2-1]+s[len(s)/2]) / 2
}

func medianFloat(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// benchTarget resolves and inspects a project for the guided benchmarks, which run only with
// ASTRABOX_BENCH_GUIDED=1 (they take tens of minutes, so `make bench` leaves them out).
func benchTarget(b *testing.B, project string) (*conformance.Target, *harness.LoadInfo) {
	b.Helper()
	if os.Getenv("ASTRABOX_BENCH_GUIDED") == "" {
		b.Skip("set ASTRABOX_BENCH_GUIDED=1 to compare guided and blind exploration (tens of minutes)")
	}
	if _, err := os.Stat(benchPython); err != nil {
		b.Skipf("%s not installed", benchPython)
	}
	ctx := context.Background()
	t, err := conformance.Resolve(ctx, conformance.Options{Project: project, Python: benchPython, Getenv: os.Getenv})
	if err != nil {
		b.Fatal(err)
	}
	info, _, err := conformance.Inspect(ctx, t)
	if err != nil || info == nil {
		b.Fatalf("inspect: %v", err)
	}
	return t, info
}

// benchMode is one way to explore: blind, blind at guided generation's lengths ("blind-long", the fair
// baseline for the guide), guided by the provider's lines and branches alone ("lines"), or
// guided by them and by the orders of callbacks ("guided", the default of --explore).
type benchMode struct {
	name                     string
	blind, linesOnly, longer bool
}

// benchModes are the modes ASTRABOX_BENCH_GUIDED_MODES names (comma-separated; default all four).
func benchModes(b *testing.B) []benchMode {
	all := []benchMode{{"blind", true, false, false}, {"blind-long", true, false, true}, {"lines", false, true, false}, {"guided", false, false, false}}
	names := os.Getenv("ASTRABOX_BENCH_GUIDED_MODES")
	if names == "" {
		return all
	}
	var out []benchMode
	for _, m := range all {
		if slices.Contains(strings.Split(names, ","), m.name) {
			out = append(out, m)
		}
	}
	if len(out) == 0 {
		b.Fatalf("ASTRABOX_BENCH_GUIDED_MODES=%q names none of blind, blind-long, lines, guided", names)
	}
	return out
}

// BenchmarkGuidedVsBlind explores each fixture whose bug needs a particular order or fault, blind and guided
// by coverage (from an empty corpus), from the same seeds, on CPython 3.12 (which measures coverage by
// default), each until its first failure or N scenarios, and reports the median number of scenarios judged
// up to the first failure (N+1 when none failed within N) and the median seconds the exploration took
// (including one shrink run and one replay of the failure).
// ASTRABOX_BENCH_GUIDED_N sets N (default 40), ASTRABOX_BENCH_GUIDED_SEEDS the number of seeds (default 3),
// ASTRABOX_BENCH_GUIDED_FIXTURES, a comma-separated list, the fixtures (default all), and
// ASTRABOX_BENCH_GUIDED_MODES the modes (benchModes).
func BenchmarkGuidedVsBlind(b *testing.B) {
	n, seeds := envInt("ASTRABOX_BENCH_GUIDED_N", 40), envInt("ASTRABOX_BENCH_GUIDED_SEEDS", 3)
	only := strings.Split(os.Getenv("ASTRABOX_BENCH_GUIDED_FIXTURES"), ",")
	for _, fx := range guidedFixtures {
		if only[0] != "" && !slices.Contains(only, fx.fixture) {
			continue
		}
		b.Run(fx.fixture, func(b *testing.B) {
			project, _ := filepath.Abs(filepath.Join("..", "..", "testdata", "providers", "broken", fx.fixture))
			t, info := benchTarget(b, project)
			modes := benchModes(b)
			for i := 0; i < b.N; i++ {
				first := make([][]int, len(modes))
				secs := make([][]float64, len(modes))
				for s := firstSeed(); s < firstSeed()+seeds; s++ {
					for k, m := range modes {
						f, el := firstFailure(b, t, info, int64(s), n, fx.check, m)
						first[k] = append(first[k], f)
						secs[k] = append(secs[k], el.Seconds())
						b.Logf("%s seed %d %s: first failure after %d scenarios (%.1fs)", fx.fixture, s, m.name, f, el.Seconds())
					}
				}
				for k, m := range modes {
					b.ReportMetric(medianInt(first[k]), "scenarios-"+m.name)
					b.ReportMetric(medianFloat(secs[k]), "s-"+m.name)
				}
			}
		})
	}
}

// firstFailure explores from seed until the first scenario that fails check (at most n), and returns how
// many scenarios that took (n+1 when none failed) and how long the exploration ran.
func firstFailure(b *testing.B, t *conformance.Target, info *harness.LoadInfo, seed int64, n int, check string, m benchMode) (int, time.Duration) {
	b.Helper()
	return exploreToFailure(b, t, info, seed, n, check, explore.Options{Blind: m.blind, LinesOnly: m.linesOnly, Longer: m.longer, Fresh: true, CorpusDir: b.TempDir()})
}

// exploreToFailure explores with o (its mode and corpus) from seed until the first scenario that fails check
// (at most n), and returns how many scenarios that took (n+1 when none failed) and how long it ran.
func exploreToFailure(b *testing.B, t *conformance.Target, info *harness.LoadInfo, seed int64, n int, check string, o explore.Options) (int, time.Duration) {
	b.Helper()
	ctx := context.Background()
	env, err := conformance.NewEnv(t, info, seed)
	if err != nil {
		b.Fatal(err)
	}
	w, err := env.NewWorkers(ctx, 2, 3)
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	start := time.Now()
	o.N, o.Seed, o.Jobs, o.Checks = n, seed, 2, []string{check}
	o.StopAfterFailure, o.FailuresDir, o.ShrinkBudget, o.Replays = true, b.TempDir(), 1, 1
	res, err := explore.Explore(ctx, env, w, o)
	if err != nil {
		b.Fatal(err)
	}
	if len(res.Errors) > 0 {
		b.Logf("seed %d: %d scenario(s) could not run, first: %s", seed, len(res.Errors), res.Errors[0])
	}
	if res.FirstFailure == 0 {
		return n + 1, time.Since(start)
	}
	return res.FirstFailure, time.Since(start)
}

// BenchmarkGuidedCoverage explores one project in each mode (from an empty corpus) from the same seeds,
// N scenarios each, and reports the median lines and branch directions (by callback) reached.
// ASTRABOX_BENCH_GUIDED_PROJECT names the project (default the reference provider), ASTRABOX_BENCH_GUIDED_N
// sets N (default 500), ASTRABOX_BENCH_GUIDED_SEEDS the number of seeds (default 3) and
// ASTRABOX_BENCH_GUIDED_MODES the modes (benchModes).
func BenchmarkGuidedCoverage(b *testing.B) {
	n, seeds := envInt("ASTRABOX_BENCH_GUIDED_N", 500), envInt("ASTRABOX_BENCH_GUIDED_SEEDS", 3)
	project := os.Getenv("ASTRABOX_BENCH_GUIDED_PROJECT")
	if project == "" {
		project = filepath.Join("..", "..", "examples", "providers", "reference")
	}
	project, _ = filepath.Abs(project)
	t, info := benchTarget(b, project)
	modes := benchModes(b)
	ctx := context.Background()
	for i := 0; i < b.N; i++ {
		reach := make([][]int, len(modes))
		for s := firstSeed(); s < firstSeed()+seeds; s++ {
			env, err := conformance.NewEnv(t, info, int64(s))
			if err != nil {
				b.Fatal(err)
			}
			w, err := env.NewWorkers(ctx, 2, 3)
			if err != nil {
				b.Fatal(err)
			}
			for k, m := range modes {
				start := time.Now()
				res, err := explore.Explore(ctx, env, w, explore.Options{N: n, Seed: int64(s), Jobs: 2, Blind: m.blind, LinesOnly: m.linesOnly, Longer: m.longer, Fresh: true,
					CorpusDir: b.TempDir(), FailuresDir: b.TempDir(), ShrinkBudget: 1, Replays: 1})
				if err != nil {
					b.Fatal(err)
				}
				reach[k] = append(reach[k], res.Reached)
				b.Logf("%s seed %d %s: %d reached after %d scenarios (%d seeds, %d favoured, %d varied, %d orders, %d states, %d not run, unreached callbacks %v; %.0fs)",
					filepath.Base(project), s, m.name, res.Reached, n, res.Seeds, res.Favoured, res.Mutated, res.Orders, res.States, len(res.Errors), res.Unreached, time.Since(start).Seconds())
			}
			w.Close()
		}
		for k, m := range modes {
			b.ReportMetric(medianInt(reach[k]), "reached-"+m.name)
		}
	}
}

// firstSeed is the first seed the guided benchmarks explore from (ASTRABOX_BENCH_GUIDED_FIRST_SEED, default 1;
// the seeds follow it), so that a measurement cut short resumes where it stopped.
func firstSeed() int { return envInt("ASTRABOX_BENCH_GUIDED_FIRST_SEED", 1) }

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// BenchmarkGuidedFromCorpus measures guided exploration that starts from a saved corpus, as a CI run does
// after the first: a corpus is grown by exploring the reference provider (a correct one that implements every
// callback) guided for ASTRABOX_BENCH_GUIDED_CORPUS_N scenarios (default 100) from seed 100, and each fixture
// is then explored guided from a copy of it, from the same seeds as BenchmarkGuidedVsBlind, until its first
// failure or N scenarios (the replayed corpus seeds count among them). It reports the median scenarios to
// the first failure. ASTRABOX_BENCH_GUIDED_N, _SEEDS, _FIRST_SEED and _FIXTURES select as there.
func BenchmarkGuidedFromCorpus(b *testing.B) {
	n, seeds := envInt("ASTRABOX_BENCH_GUIDED_N", 40), envInt("ASTRABOX_BENCH_GUIDED_SEEDS", 3)
	ref, _ := filepath.Abs(filepath.Join("..", "..", "examples", "providers", "reference"))
	rt, rinfo := benchTarget(b, ref)
	corpus := b.TempDir()
	ctx := context.Background()
	{
		env, err := conformance.NewEnv(rt, rinfo, 100)
		if err != nil {
			b.Fatal(err)
		}
		w, err := env.NewWorkers(ctx, 2, 3)
		if err != nil {
			b.Fatal(err)
		}
		res, err := explore.Explore(ctx, env, w, explore.Options{N: envInt("ASTRABOX_BENCH_GUIDED_CORPUS_N", 100), Seed: 100, Jobs: 2,
			CorpusDir: corpus, FailuresDir: b.TempDir(), ShrinkBudget: 1, Replays: 1})
		w.Close()
		if err != nil {
			b.Fatal(err)
		}
		b.Logf("corpus grown on the reference provider: %d seeds, %d reached", res.Seeds, res.Reached)
	}
	only := strings.Split(os.Getenv("ASTRABOX_BENCH_GUIDED_FIXTURES"), ",")
	for _, fx := range guidedFixtures {
		if only[0] != "" && !slices.Contains(only, fx.fixture) {
			continue
		}
		b.Run(fx.fixture, func(b *testing.B) {
			project, _ := filepath.Abs(filepath.Join("..", "..", "testdata", "providers", "broken", fx.fixture))
			t, info := benchTarget(b, project)
			for i := 0; i < b.N; i++ {
				var first []int
				for s := firstSeed(); s < firstSeed()+seeds; s++ {
					dir := b.TempDir()
					copyCorpus(b, corpus, dir)
					f, el := exploreToFailure(b, t, info, int64(s), n, fx.check, explore.Options{CorpusDir: dir})
					first = append(first, f)
					b.Logf("%s seed %d guided from the corpus: first failure after %d scenarios (%.1fs)", fx.fixture, s, f, el.Seconds())
				}
				b.ReportMetric(medianInt(first), "scenarios-corpus")
			}
		})
	}
}

// copyCorpus copies the saved seeds of one corpus directory into another.
func copyCorpus(b *testing.B, from, to string) {
	b.Helper()
	entries, err := os.ReadDir(from)
	if err != nil {
		b.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, e.Name()), data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
}
