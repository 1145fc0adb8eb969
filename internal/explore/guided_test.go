package explore

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/astrabox-dev/astrabox/internal/conformance"
	"github.com/astrabox-dev/astrabox/internal/simulate"
)

// setupCovered is setup with an interpreter that measures coverage by default (3.12+).
func setupCovered(t *testing.T, dir string, seed int64, jobs int) (*conformance.Env, *conformance.Workers) {
	t.Helper()
	py := "/root/.pyenv/versions/3.12.1/bin/python3"
	if _, err := os.Stat(py); err != nil {
		t.Skipf("%s not installed", py)
	}
	ctx := context.Background()
	abs, _ := filepath.Abs(dir)
	tg, err := conformance.Resolve(ctx, conformance.Options{Project: abs, Python: py, Getenv: func(k string) string {
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
	env, err := conformance.NewEnv(tg, info, seed)
	if err != nil {
		t.Fatal(err)
	}
	if env.Sim.Coverage == nil {
		t.Fatal("coverage is off on Python 3.12")
	}
	w, err := env.NewWorkers(ctx, jobs, 3)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	return env, w
}

func corpusFiles(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	if err := os.MkdirAll(to, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range corpusFiles(t, from) {
		data, err := os.ReadFile(filepath.Join(from, n))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, n), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestGuidedExplorationKeepsSeedsAndIsDeterministic explores the reference provider guided by coverage: the
// scenarios that reached new provider code become the corpus, saved under the corpus directory; the next run
// replays it first; and the same seed with the same corpus gives the same run, with one job or two.
//
// The lengths are the shortest that keep every claim (seed 4, measured): 8 scenarios vary a seed (one of
// them is mutated, all eight join the corpus), and the two runs from that corpus go 4 scenarios past it, one
// of them mutated, so that one job and two agree on new and varied scenarios, not only on the replay (with
// 16 and 16, as before, the first run kept 15 seeds and the two runs agreed on one scenario past them).
func TestGuidedExplorationKeepsSeedsAndIsDeterministic(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python")
	}
	ref := filepath.Join("..", "..", "examples", "providers", "reference")
	env, w := setupCovered(t, ref, 4, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	first := t.TempDir()
	const n, past = 8, 4
	o := Options{N: n, Seed: 4, Jobs: 2, CorpusDir: first, FailuresDir: t.TempDir()}
	res, err := Explore(ctx, env, w, o)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Guided || res.Seeds == 0 || res.Reached == 0 || res.Replayed != 0 || res.Coverage == nil {
		t.Fatalf("first run: %+v", res)
	}
	if res.Mutated == 0 {
		t.Errorf("the second round varied no seed: %+v", res)
	}
	saved := corpusFiles(t, first)
	if len(saved) != res.Seeds {
		t.Fatalf("%d corpus files for %d seeds", len(saved), res.Seeds)
	}
	for _, n := range saved {
		if _, err := simulate.LoadScenario(filepath.Join(first, n)); err != nil {
			t.Fatalf("corpus seed %s does not load: %v", n, err)
		}
	}
	// Two runs from the same corpus and seed, one with two jobs and one with one, give the same run.
	a, b := t.TempDir(), t.TempDir()
	copyDir(t, first, a)
	copyDir(t, first, b)
	ra, err := Explore(ctx, env, w, Options{N: len(saved) + past, Seed: 4, Jobs: 2, CorpusDir: a, FailuresDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	env1, w1 := setupCovered(t, ref, 4, 1)
	rb, err := Explore(ctx, env1, w1, Options{N: len(saved) + past, Seed: 4, Jobs: 1, CorpusDir: b, FailuresDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if ra.Replayed != len(saved) {
		t.Errorf("replayed %d of %d corpus seeds", ra.Replayed, len(saved))
	}
	if ra.Mutated == 0 {
		t.Errorf("the runs from the corpus varied no seed past it, so one job and two were compared on no variation: %+v", ra)
	}
	sum := func(r *Result) [4]int { return [4]int{r.Replayed, r.Mutated, r.Seeds, r.Reached} }
	if sum(ra) != sum(rb) || !reflect.DeepEqual(corpusFiles(t, a), corpusFiles(t, b)) {
		t.Errorf("same seed and corpus, different runs: %v vs %v; corpus %v vs %v", sum(ra), sum(rb), corpusFiles(t, a), corpusFiles(t, b))
	}
	// --explore-fresh reads no corpus and leaves it as it is.
	rf, err := Explore(ctx, env, w, Options{N: 4, Seed: 9, Jobs: 2, CorpusDir: a, Fresh: true, FailuresDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if rf.Replayed != 0 || !reflect.DeepEqual(corpusFiles(t, a), corpusFiles(t, b)) {
		t.Errorf("a fresh run used or changed the corpus: %+v", rf)
	}
}
