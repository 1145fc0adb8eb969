package explore

import (
	"cmp"
	"fmt"
	"math/rand"
	"slices"

	"github.com/astrabox-dev/astrabox/internal/conformance"
	"github.com/astrabox-dev/astrabox/internal/coverage"
	"github.com/astrabox-dev/astrabox/internal/simulate"
)

// freshShare is the share of scenarios generated from scratch, rather than varied from a seed, once the
// corpus has seeds.
const freshShare = 0.5

// uniformShare is the share of variations whose seed is drawn uniformly from the corpus, rather than by the
// rarity of what it represents, so that no seed starves.
const uniformShare = 0.2

// guide keeps the corpus of seeds (scenarios that reached something no earlier one had) and chooses each
// scenario of a guided exploration: a corpus seed to replay, a variation of seeds, or a fresh one.
//
// A feature is a line or branch direction of the provider that a callback ran, or an order of two callbacks
// (orderFeatures). Like AFL's favoured entries, every feature reached is represented by one seed, the shortest that reached
// it (the first found on a tie); a seed is varied in proportion to the rarity of the features it
// represents (each feature weighs one over the number of judged scenarios that reached it). A seed that
// reached a line few scenarios reach is varied often until its variations reach that line too; a seed
// whose every feature a shorter one also reached is varied only by the uniform share.
type guide struct {
	seed   int64
	replay []*simulate.Scenario // the saved corpus, replayed first
	// seeds is this run's corpus, in the order found.
	seeds []*simulate.Scenario
	ids   map[feature]int // a number per feature reached, in the order first reached
	hits  []int           // per feature: the judged scenarios that reached it
	top   []int           // per feature: the seed that represents it
	// covered counts the features that are lines and branch directions (the rest are orders of callbacks).
	covered int
	// linesOnly leaves orders of callbacks out of the features.
	linesOnly bool
	cov       *coverage.Builder
	// mutated counts the scenarios varied from seeds.
	mutated int
}

func newGuide(seed int64, saved []*simulate.Scenario) *guide {
	return &guide{seed: seed, replay: saved, ids: map[feature]int{}, cov: coverage.NewBuilder()}
}

// next chooses scenario number index from the corpus as it stands.
func (g *guide) next(index int) *simulate.Scenario {
	if index < len(g.replay) {
		return clone(g.replay[index])
	}
	rng := rand.New(rand.NewSource(g.seed*15485863 + int64(index)*32452843 + 7))
	if len(g.seeds) == 0 || rng.Float64() < freshShare {
		return Generate(g.seed, index)
	}
	for attempt := 0; attempt < 8; attempt++ {
		cand := mutate(rng, g.pick(rng), g.seeds)
		if cand != nil && cand.Validate() == nil {
			cand.Name = fmt.Sprintf("explore-%d-%d", g.seed, index)
			cand.Seed = g.seed*1000003 + int64(index)
			g.mutated++
			return cand
		}
	}
	return Generate(g.seed, index)
}

// pick chooses the seed to vary: by the rarity of the features each seed represents, or (uniformShare of
// the time) any seed.
func (g *guide) pick(rng *rand.Rand) *simulate.Scenario {
	if rng.Float64() < uniformShare {
		return g.seeds[rng.Intn(len(g.seeds))]
	}
	weights := g.weights()
	total := 0.0
	for _, w := range weights {
		total += w
	}
	x := rng.Float64() * total
	for e, w := range weights {
		if x < w {
			return g.seeds[e]
		}
		x -= w
	}
	return g.seeds[len(g.seeds)-1]
}

// weights are the seeds' shares of the rarity of the features they represent, summed in feature order so
// that the same observations always give the same weights.
func (g *guide) weights() []float64 {
	w := make([]float64, len(g.seeds))
	for id, e := range g.top {
		w[e] += 1 / float64(g.hits[id])
	}
	return w
}

// observe takes a judged scenario's history (in index order): it counts what the scenario reached, and a
// scenario that reached something new joins the corpus and represents every feature it reached with fewer
// steps than the seed representing it so far. It reports whether the scenario joined.
func (g *guide) observe(sc *simulate.Scenario, h *simulate.History) bool {
	conformance.AddCoverage(g.cov, h)
	fs := make([]feature, 0, len(g.ids))
	for f := range features(h) {
		fs = append(fs, f)
	}
	if !g.linesOnly {
		for f := range orderFeatures(h) {
			fs = append(fs, f)
		}
	}
	slices.SortFunc(fs, compareFeatures)
	fresh := false
	reached := make([]int, 0, len(fs))
	for _, f := range fs {
		id, ok := g.ids[f]
		if !ok {
			id = len(g.hits)
			g.ids[f] = id
			g.hits = append(g.hits, 0)
			g.top = append(g.top, -1)
			fresh = true
			if f.key != keyOrder {
				g.covered++
			}
		}
		g.hits[id]++
		reached = append(reached, id)
	}
	if !fresh {
		return false
	}
	e := len(g.seeds)
	g.seeds = append(g.seeds, clone(sc))
	for _, id := range reached {
		if g.top[id] < 0 || len(sc.Steps) < len(g.seeds[g.top[id]].Steps) {
			g.top[id] = e
		}
	}
	return true
}

// favoured counts the seeds that represent at least one feature.
func (g *guide) favoured() int {
	rep := map[int]bool{}
	for _, e := range g.top {
		rep[e] = true
	}
	return len(rep)
}

// compareFeatures orders features by callback, file, branch or line, and number.
func compareFeatures(a, b feature) int {
	if c := cmp.Compare(a.key, b.key); c != 0 {
		return c
	}
	if c := cmp.Compare(a.path, b.path); c != 0 {
		return c
	}
	if a.branch != b.branch {
		if a.branch {
			return 1
		}
		return -1
	}
	return cmp.Compare(a.n, b.n)
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
