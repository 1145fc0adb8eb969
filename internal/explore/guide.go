package explore

import (
	"context"
	"fmt"
	"math/rand"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/astrabox-dev/astrabox/internal/conformance"
	"github.com/astrabox-dev/astrabox/internal/coverage"
	"github.com/astrabox-dev/astrabox/internal/harness"
	"github.com/astrabox-dev/astrabox/internal/simulate"
)

// roundSize is how many scenarios are chosen at once in a guided exploration: every scenario of a round is
// generated from the corpus as it stood when the round began, and the round's histories are taken in index
// order, so the run does not depend on which worker finished first (nor on --jobs).
const roundSize = 8

// freshShare is the share of scenarios generated from scratch, rather than varied from a seed, once the
// corpus has seeds.
const freshShare = 0.5

// feature is one thing a scenario reached of the provider: a line or a branch direction of a file, as one
// callback ran it. Loading is left out: warm replicas load once for many scenarios.
type feature struct {
	key, path string
	n         int
	branch    bool
}

// features are what a history's callbacks reached.
func features(h *simulate.History) map[feature]bool {
	out := map[feature]bool{}
	var reports []*harness.CoverageReport
	for _, c := range h.Calls() {
		reports = append(reports, c.Coverage)
	}
	for _, c := range h.Coverage {
		reports = append(reports, c.Report)
	}
	for _, r := range reports {
		if r == nil {
			continue
		}
		for _, hit := range r.Hits {
			if hit.Key == coverage.KeyLoad {
				continue
			}
			for path, lines := range hit.Lines {
				for _, l := range lines {
					out[feature{hit.Key, path, l, false}] = true
				}
			}
			for path, dirs := range hit.Branches {
				for _, d := range dirs {
					out[feature{hit.Key, path, d, true}] = true
				}
			}
		}
	}
	return out
}

// guide keeps the corpus of seeds (scenarios that reached something no earlier one had) and chooses each
// scenario of a guided exploration: a corpus seed to replay, a variation of seeds, or a fresh one.
type guide struct {
	seed    int64
	replay  []*simulate.Scenario // the saved corpus, replayed first
	seeds   []*simulate.Scenario // this run's corpus, in the order they were found
	reached map[feature]bool
	cov     *coverage.Builder
	mutated int
}

func newGuide(seed int64, saved []*simulate.Scenario) *guide {
	return &guide{seed: seed, replay: saved, reached: map[feature]bool{}, cov: coverage.NewBuilder()}
}

// next chooses scenario number index.
func (g *guide) next(index int) *simulate.Scenario {
	if index < len(g.replay) {
		return clone(g.replay[index])
	}
	rng := rand.New(rand.NewSource(g.seed*15485863 + int64(index)*32452843 + 7))
	if len(g.seeds) == 0 || rng.Float64() < freshShare {
		return Generate(g.seed, index)
	}
	for attempt := 0; attempt < 8; attempt++ {
		cand := mutate(rng, g.pick(rng), g.seeds, g.seed)
		if cand != nil && cand.Validate() == nil {
			cand.Name = fmt.Sprintf("explore-%d-%d", g.seed, index)
			cand.Seed = g.seed*1000003 + int64(index)
			g.mutated++
			return cand
		}
	}
	return Generate(g.seed, index)
}

// pick chooses the seed to vary: half the time one of the newest quarter (what was found last is where the
// frontier is), else any.
func (g *guide) pick(rng *rand.Rand) *simulate.Scenario {
	n := len(g.seeds)
	if rng.Intn(2) == 0 {
		q := max(1, n/4)
		return g.seeds[n-q+rng.Intn(q)]
	}
	return g.seeds[rng.Intn(n)]
}

// observe takes a judged scenario's history: one that reached something new joins the corpus.
func (g *guide) observe(sc *simulate.Scenario, h *simulate.History) bool {
	conformance.AddCoverage(g.cov, h)
	fresh := false
	for f := range features(h) {
		if !g.reached[f] {
			g.reached[f] = true
			fresh = true
		}
	}
	if fresh {
		g.seeds = append(g.seeds, clone(sc))
	}
	return fresh
}

// guide returns the guide of an exploration, or nil when it runs blind: it replays given scenarios
// (--last-failed), or the replicas measure no coverage.
func (o *Options) guide(env *conformance.Env) (*guide, error) {
	if len(o.Scenarios) > 0 || o.Blind {
		return nil, nil
	}
	if env.Sim.Coverage == nil {
		if o.Log != nil && o.N > 0 {
			fmt.Fprintln(o.Log, "exploration runs blind (not guided by coverage): coverage of the provider is off; --coverage turns it on")
		}
		return nil, nil
	}
	if o.CorpusDir == "" {
		o.CorpusDir = filepath.Join(env.Target.Project.Dir, ".astrabox", "corpus")
	}
	var saved []*simulate.Scenario
	if !o.Fresh {
		var skipped []string
		var err error
		if saved, skipped, err = loadCorpus(o.CorpusDir); err != nil {
			return nil, err
		}
		for _, s := range skipped {
			if o.Log != nil {
				fmt.Fprintf(o.Log, "warning: corpus seed %s is left out\n", s)
			}
		}
	}
	return newGuide(o.Seed, saved), nil
}

// scenario is blind exploration's scenario number idx.
func (o *Options) scenario(idx int) *simulate.Scenario {
	if len(o.Scenarios) > 0 {
		return o.Scenarios[idx]
	}
	return Generate(o.Seed, idx)
}

// runAll calls do(k) for k in [0, n) on jobs goroutines, stopping early when ctx ends.
func runAll(ctx context.Context, jobs, n int, do func(k int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for j := 0; j < jobs; j++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				k := int(next.Add(1)) - 1
				if k >= n || ctx.Err() != nil {
					return
				}
				do(k)
			}
		}()
	}
	wg.Wait()
}

// guided explores in rounds: each round's scenarios are chosen from the corpus as it stood at the round's
// start, judged on the workers, and their histories then observed in index order, so that the same seed and
// the same corpus give the same run whatever the number of jobs.
func guided(ctx context.Context, env *conformance.Env, w *conformance.Workers, o Options, g *guide, indexes []int, jobs int, t *tally) {
	for start := 0; start < len(indexes) && ctx.Err() == nil; start += roundSize {
		round := indexes[start:min(start+roundSize, len(indexes))]
		scs := make([]*simulate.Scenario, len(round))
		for k, idx := range round {
			scs[k] = g.next(idx)
			env.Adjust(scs[k])
		}
		hists := make([]*simulate.History, len(round))
		runAll(ctx, jobs, len(round), func(k int) {
			ids, msgs, h, err := judge(ctx, env, w, scs[k], o)
			hists[k] = h
			t.add(round[k], scs[k], ids, msgs, h, err)
		})
		for k, h := range hists {
			if h != nil {
				g.observe(scs[k], h)
			}
		}
		t.reached.Store(int64(len(g.reached)))
	}
}

// saved is the corpus to save after judging n scenarios: this run's seeds, then the saved seeds it did not
// get to replay.
func (g *guide) saved(n int) []*simulate.Scenario {
	out := append([]*simulate.Scenario(nil), g.seeds...)
	if n < len(g.replay) {
		out = append(out, g.replay[n:]...)
	}
	return out
}

// replayed counts the indexes that replayed a saved seed.
func (g *guide) replayed(indexes []int) int {
	n := 0
	for _, i := range indexes {
		if i < len(g.replay) {
			n++
		}
	}
	return n
}
