package explore

import (
	"maps"
	"slices"

	"github.com/astrabox-dev/astrabox/internal/simulate"
)

// noveltyTries is how many draws a step of guided generation looks at for a new situation of the platform.
const noveltyTries = 8

// novelty steers generation towards situations of the platform (model.keys) that no observed scenario
// showed: each step is the first of noveltyTries draws (by the generator's own weights) whose situation is
// neither in seen nor earlier in the scenario, or the first draw when none is. Early on every situation is
// new and the first draw is taken, so the scenario is the blind generator's; as the observed scenarios cover
// the common situations, draws that reach a rare combination (a reattachment after another principal's
// Session on that replica, a recover while a write is held and another operation wrote last, a turn where
// the replica last read another consent) are taken several times as often as the weights alone would.
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

// novelStep appends the first of noveltyTries draws whose situation is new, or the first draw.
func (g *gen) novelStep() {
	var chosen *gen
	for t := 0; t < noveltyTries; t++ {
		c := g.fork()
		c.draw()
		if chosen == nil {
			chosen = c
		}
		if g.novelty.isNew(c.steps[len(c.steps)-1]) {
			chosen = c
			break
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
