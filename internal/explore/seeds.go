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

// uniformShare is the share of variations whose seed is drawn uniformly from the corpus, rather than by the
// rarity of what it represents, so that no seed starves.
const uniformShare = 0.2

// guide keeps the corpus of seeds (scenarios that reached something no earlier one had) and chooses each
// scenario of a guided exploration: a corpus seed to replay, a variation of seeds, or a fresh one.
//
// A feature is a line or branch direction of the provider that a callback ran, an order of two callbacks
// (orderFeatures), or a state of the platform a callback ran in (stateFeatures). Like AFL's favoured
// entries, every feature reached is represented by one seed, the shortest that reached it (the first found on
// a tie); a seed is varied in proportion to the rarity of the features it represents (each feature weighs
// one over the number of judged scenarios that reached it). A seed that reached a line few scenarios reach
// is varied often until its variations reach that line too; a seed whose every feature a shorter one also
// reached is varied only by the uniform share.
type guide struct {
	seed   int64
	replay []*simulate.Scenario // the saved corpus, replayed first
	// seeds is this run's corpus, in the order found; at is, per seed, the step (1-based) at which it reached
	// the last of the platform states no earlier scenario had (0 when it reached none): variations insert
	// steps right after it.
	seeds []*simulate.Scenario
	at    []int
	ids   map[feature]int // a number per feature reached, in the order first reached
	hits  []int           // per feature: the judged scenarios that reached it
	top   []int           // per feature: the seed that represents it
	// covered counts the features that are lines and branch directions, states the platform states (the rest
	// are orders of callbacks).
	covered, states int
	// linesOnly leaves orders of callbacks and platform states out of the features.
	linesOnly bool
	cov       *coverage.Builder
	// mutated counts the scenarios varied from seeds.
	mutated int
	// share decides how many scenarios are fresh (adaptive.go); aim steers the generator towards implemented
	// callbacks no scenario has called yet (direct.go).
	share share
	aim   aim
	// novel holds the situations of the platform the observed scenarios' steps showed (model.keys); fresh
	// scenarios and inserted steps prefer others (novelty.go). Nil guided by lines alone.
	novel map[string]bool
}

func newGuide(seed int64, saved []*simulate.Scenario) *guide {
	return &guide{seed: seed, replay: saved, ids: map[feature]int{}, cov: coverage.NewBuilder(), share: newShare(), novel: map[string]bool{}}
}

// next chooses scenario number index from the corpus as it stands.
func (g *guide) next(index int) *simulate.Scenario {
	if index < len(g.replay) {
		return clone(g.replay[index])
	}
	rng := rand.New(rand.NewSource(g.seed*15485863 + int64(index)*32452843 + 7))
	boost := g.aim.boost()
	if len(g.seeds) == 0 || rng.Float64() < g.share.fresh() {
		g.share.chose(index, false)
		return generate(g.seed, index, boost, g.novel)
	}
	for attempt := 0; attempt < 8; attempt++ {
		e := g.pick(rng)
		cand := mutate(rng, g.seeds[e], g.at[e], g.seeds, boost, g.novel)
		if cand != nil && cand.Validate() == nil {
			cand.Name = fmt.Sprintf("explore-%d-%d", g.seed, index)
			cand.Seed = g.seed*1000003 + int64(index)
			g.mutated++
			g.share.chose(index, true)
			return cand
		}
	}
	g.share.chose(index, false)
	return generate(g.seed, index, boost, g.novel)
}

// pick chooses the seed to vary: by the rarity of the features each seed represents, or (uniformShare of
// the time) any seed.
func (g *guide) pick(rng *rand.Rand) int {
	if rng.Float64() < uniformShare {
		return rng.Intn(len(g.seeds))
	}
	weights := g.weights()
	total := 0.0
	for _, w := range weights {
		total += w
	}
	x := rng.Float64() * total
	for e, w := range weights {
		if x < w {
			return e
		}
		x -= w
	}
	return len(g.seeds) - 1
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
	g.aim.called(h)
	fs := make([]feature, 0, len(g.ids))
	for f := range features(h) {
		fs = append(fs, f)
	}
	var states map[feature]int
	if !g.linesOnly {
		for _, k := range situations(sc) {
			g.novel[k] = true
		}
		for f := range orderFeatures(h) {
			fs = append(fs, f)
		}
		states = stateFeatures(h)
		for f := range states {
			fs = append(fs, f)
		}
	}
	slices.SortFunc(fs, compareFeatures)
	fresh, at := false, 0
	reached := make([]int, 0, len(fs))
	for _, f := range fs {
		id, ok := g.ids[f]
		if !ok {
			id = len(g.hits)
			g.ids[f] = id
			g.hits = append(g.hits, 0)
			g.top = append(g.top, -1)
			fresh = true
			switch f.key {
			case keyOrder:
			case keyState:
				g.states++
				at = max(at, states[f])
			default:
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
	g.at = append(g.at, min(at, len(sc.Steps)))
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
