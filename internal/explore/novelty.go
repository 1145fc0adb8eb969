package explore

import (
	"maps"
	"slices"

	"github.com/astrabox-dev/astrabox/internal/simulate"
)

// noveltyTries is how many draws of each op a step of guided generation looks at for a new situation of the
// platform.
const noveltyTries = 3

// novelty steers generation towards situations of the platform (model.keys) that no observed scenario
// showed: each step draws, for every op whose need holds, up to noveltyTries steps of that op, keeps the
// first whose situation is neither in seen nor earlier in the scenario, and then chooses among the ops that
// have one by the generator's own weights; when no op has one, it is a plain draw. Early on every situation
// is new and the choice is the blind generator's weights over all ops; as the observed scenarios cover the
// common situations, a rare op that reaches a new one (a consent change that makes a replica's reading
// stale, a recover of a second held operation on one replica) is taken whenever it has one, not only when
// it happens to come up among a few draws by weight, where an op of weight 3 in about 100 seldom does
// (docs/performance.md, "Guidance at equal length").
type novelty struct {
	m     *model
	seen  map[string]bool // situations of the observed scenarios (the guide's; read only here)
	local map[string]bool // situations of this scenario's steps so far
}

// seek makes g steer by novelty from model m's state.
func (g *gen) seek(m *model, seen map[string]bool) {
	g.novelty = &novelty{m: m, seen: seen, local: map[string]bool{}}
}

// took takes a step into the state.
func (n *novelty) took(st simulate.Step) {
	for _, k := range n.m.keys(st) {
		n.local[k] = true
	}
	n.m.apply(st)
}

// isNew tells whether step st would put the platform in a situation not seen.
func (n *novelty) isNew(st simulate.Step) bool {
	for _, k := range n.m.keys(st) {
		if !n.seen[k] && !n.local[k] {
			return true
		}
	}
	return false
}

// novelStep appends a step of an op that has a new situation (chosen by weight among those that do), or a
// plain draw when none has.
func (g *gen) novelStep() {
	type option struct {
		c *gen
		w int
	}
	var options []option
	total := 0
	for _, op := range g.table().generated {
		if !g.holds(op.Need) {
			continue
		}
		for t := 0; t < noveltyTries; t++ {
			c := g.fork()
			st := op.Emit(c)
			c.track(st)
			c.add(st)
			if g.novelty.isNew(st) {
				options = append(options, option{c, g.weight(op)})
				total += g.weight(op)
				break
			}
		}
	}
	chosen := g.fork()
	if len(options) == 0 {
		chosen.draw()
	} else {
		x := g.rng.Intn(total)
		for _, o := range options {
			if x < o.w {
				chosen = o.c
				break
			}
			x -= o.w
		}
	}
	*g = *chosen
	g.novelty.took(g.steps[len(g.steps)-1])
}

// fork copies the generator's state (the random source and the novelty are shared), so that a draw can be
// tried and dropped.
func (g *gen) fork() *gen {
	c := *g
	c.steps, c.sessions, c.lost = slices.Clone(g.steps), slices.Clone(g.sessions), slices.Clone(g.lost)
	c.attempts = maps.Clone(g.attempts)
	for s, a := range g.attempts {
		c.attempts[s] = slices.Clone(a)
	}
	return &c
}
