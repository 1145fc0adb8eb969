// Package explore finds contract breaches that only show in particular orders: it generates seeded random
// lifecycle scenarios with faults (only in orders the platform itself could produce), judges every history
// with the conformance checks, shrinks a failing scenario to a smallest one that still fails the same check,
// saves it as a replayable YAML file, and tells flaky results apart from failures.
package explore

import (
	"fmt"
	"math/rand"
	"slices"

	"github.com/astrabox-dev/astrabox/internal/simulate"
)

// principals used by generated scenarios: one granted, one pending, one whose consent completes on check.
var principals = []string{"alice", "bob", "dave"}

// Generate returns generated scenario number index of a seed. The same (seed, index) always gives the same
// scenario.
func Generate(seed int64, index int) *simulate.Scenario { return generate(seed, index, nil, nil) }

// Lengths of fresh scenarios. Blind generation gives freshMin to freshMax steps (the generator that runs when
// coverage is off, pinned by TestGeneratedScenariosAreStable); guided generation gives the same (seed, index)
// guidedMoreMin to guidedMoreMax steps more. Measured on leak-cross-session-reattach (seeds 1 to 12,
// docs/performance.md, fourth round), guided scenarios of 6 to 20 steps found its breach after a median of
// 12.5 scenarios against 23.5 with 3 to 12 steps, in fewer seconds; blind generation at the same lengths did
// as well there, so it is the length, not the guide, that helps that breach.
const (
	freshMin, freshMax           = 3, 12
	guidedMoreMin, guidedMoreMax = 3, 8
)

// generate is Generate with the weights of some ops multiplied (boost, by op name) and, when novel is not
// nil, guidedMoreMin to guidedMoreMax steps more, each preferring a situation of the platform outside novel
// (novelty.go). With neither it is the same scenario as Generate.
func generate(seed int64, index int, boost map[string]int, novel map[string]bool) *simulate.Scenario {
	return generateLen(seed, index, boost, novel, novel != nil)
}

// generateLong is blind generation at guided generation's lengths: guidedMoreMin to guidedMoreMax steps more
// than Generate, drawn by weight alone (Options.Longer; benchmarks compare guided and blind at equal length).
func generateLong(seed int64, index int) *simulate.Scenario {
	return generateLen(seed, index, nil, nil, true)
}

// generateLen is generate, with the guided lengths when longer.
func generateLen(seed int64, index int, boost map[string]int, novel map[string]bool, longer bool) *simulate.Scenario {
	rng := rand.New(rand.NewSource(seed*7919 + int64(index)*104729 + 1))
	g := &gen{rng: rng, attempts: map[string][]string{}, boost: boost}
	g.replicas = 2 + rng.Intn(2)
	sc := &simulate.Scenario{
		Name:     fmt.Sprintf("explore-%d-%d", seed, index),
		Seed:     seed*1000003 + int64(index),
		Replicas: g.replicas,
		Principals: map[string]simulate.Principal{
			"alice": {Consent: "granted"},
			"bob":   {Consent: "pending"},
			"dave":  {Consent: "granted", ConsentOnCheck: "granted"},
		},
		Agents: []simulate.AgentSpec{{ID: "agent-1", Creator: "alice"}},
	}
	if novel != nil {
		g.seek(newModel(g.replicas, sc.Principals), novel)
	}
	n := freshMin + rng.Intn(freshMax-freshMin+1)
	if longer {
		n += guidedMoreMin + rng.Intn(guidedMoreMax-guidedMoreMin+1)
	}
	for len(g.steps) < n {
		g.step()
	}
	sc.Steps = g.steps
	if err := sc.Validate(); err != nil {
		// The generator only emits valid orders; a failure here is a bug in it.
		panic(fmt.Sprintf("explore: generated an invalid scenario: %v", err))
	}
	return sc
}

// gen is the generator's state as it adds steps to a scenario.
type gen struct {
	rng      *rand.Rand
	replicas int
	steps    []simulate.Step
	sessions []string
	attempts map[string][]string
	// nSession and nAttempt number the next new Session and attempt.
	nSession int
	nAttempt int
	ops      int
	held     bool
	lost     []int // operations lost with their host while a write was held
	// boost multiplies the weights of some ops (by name; aim).
	boost map[string]int
	// novelty, when set, steers each step towards situations of the platform not seen yet (novelty.go).
	novelty *novelty
	// tables, when set, replaces the registered ops' tables (a test's, with an op of its own).
	tables *opTables
}

// The generator is the simulate.Draw each op's emitter (its spec's Gen.Emit) writes its step from.
var _ simulate.Draw = (*gen)(nil)

// Intn returns a number in [0, n) from the generator's random source.
func (g *gen) Intn(n int) int { return g.rng.Intn(n) }

// Chance returns true with probability p.
func (g *gen) Chance(p float64) bool { return g.rng.Float64() < p }

// Replica draws one of the scenario's replicas.
func (g *gen) Replica() string { return simulate.ReplicaName(1 + g.rng.Intn(g.replicas)) }

// Agent is the generated scenarios' one Agent.
func (g *gen) Agent() string { return "agent-1" }

// Principal draws one of the generated scenarios' principals.
func (g *gen) Principal() string { return principals[g.rng.Intn(len(principals))] }

// Session draws a Session an earlier step started.
func (g *gen) Session() string { return g.sessions[g.rng.Intn(len(g.sessions))] }

// NewSession names the next new Session.
func (g *gen) NewSession() string {
	g.nSession++
	return fmt.Sprintf("s%d", g.nSession)
}

// NewAttempt names the next new attempt.
func (g *gen) NewAttempt() string {
	g.nAttempt++
	return fmt.Sprintf("t%d", g.nAttempt)
}

// Attempts lists each earlier turn's Session and attempt, by Session in the order they started.
func (g *gen) Attempts() [][2]string {
	var out [][2]string
	for _, s := range g.sessions {
		for _, a := range g.attempts[s] {
			out = append(out, [2]string{s, a})
		}
	}
	return out
}

// Operations is how many operations earlier prewarms started.
func (g *gen) Operations() int { return g.ops }

// Lost lists the operations lost with their host while their write was held.
func (g *gen) Lost() []int { return g.lost }

func (g *gen) add(st simulate.Step) { g.steps = append(g.steps, st) }

// opTables are explore's tables of the ops, every one derived from simulate's op registry
// (simulate.Registered), so that a new op is written in its spec alone: the ops the generator draws, with
// their weights, needs and emitters, in the order it lays their weights out; per callback, the generated ops
// that make the platform call it (aim, direct.go); the ops about a Session that make a callback (the model's
// Session situations, model.go); and the ops that start a Session (the generator's state, track).
type opTables struct {
	generated     []simulate.GenOp
	callbackOps   map[simulate.Callback][]string
	sessionOps    map[string]bool
	startsSession map[string]bool
}

// deriveTables builds explore's op tables from the ops' specs. An op whose generator spec has problems (no
// emitter, an emitter that draws what its need does not promise: simulate.GenProblems) is not drawn, and
// simulate's TestOpRegistryComplete names what it lacks, so that a half-written spec cannot crash generation.
func deriveTables(specs []simulate.Op) *opTables {
	t := &opTables{callbackOps: map[simulate.Callback][]string{}, sessionOps: map[string]bool{}, startsSession: map[string]bool{}}
	for _, op := range specs {
		if op.Gen != nil && len(simulate.GenProblems(op)) == 0 {
			t.generated = append(t.generated, simulate.GenOp{Name: op.Name, Gen: *op.Gen})
			for _, cb := range op.Calls {
				t.callbackOps[cb] = append(t.callbackOps[cb], op.Name)
			}
		}
		if op.Session != simulate.SessionNone && len(op.Calls) > 0 {
			t.sessionOps[op.Name] = true
		}
		if op.Session == simulate.SessionStarts {
			t.startsSession[op.Name] = true
		}
	}
	return t
}

// ops are explore's op tables for the registered ops.
var ops = deriveTables(simulate.Registered())

// table is the generator's op tables: a test's when it set them, else the registered ops'.
func (g *gen) table() *opTables {
	if g.tables != nil {
		return g.tables
	}
	return ops
}

// step appends one platform step whose preconditions hold (draw); with novelty, a step of one of the ops
// that reach a new situation (novelStep).
func (g *gen) step() {
	if g.novelty == nil {
		g.draw()
		return
	}
	g.novelStep()
}

// draw appends one platform step whose preconditions hold: it draws an op by weight among those whose need
// holds now.
func (g *gen) draw() {
	generated := g.table().generated
	total := 0
	for _, op := range generated {
		if g.holds(op.Need) {
			total += g.weight(op)
		}
	}
	pick := g.rng.Intn(total)
	for _, op := range generated {
		if !g.holds(op.Need) {
			continue
		}
		if w := g.weight(op); pick >= w {
			pick -= w
			continue
		}
		st := op.Emit(g)
		g.track(st)
		g.add(st)
		return
	}
}

// holds tells whether what an op needs exists in the scenario so far.
func (g *gen) holds(need simulate.GenNeed) bool {
	switch need {
	case simulate.NeedSession:
		return len(g.sessions) > 0
	case simulate.NeedAttempt:
		for _, a := range g.attempts {
			if len(a) > 0 {
				return true
			}
		}
		return false
	case simulate.NeedOperation:
		return g.ops > 0
	case simulate.NeedHeld:
		return g.held
	}
	return true
}

// weight is an op's weight now: its lost weight once an operation was lost with its host, when it has one,
// times its boost.
func (g *gen) weight(op simulate.GenOp) int {
	w := op.Weight
	if len(g.lost) > 0 && op.LostWeight > 0 {
		w = op.LostWeight
	}
	if b, ok := g.boost[op.Name]; ok {
		w *= b
	}
	return w
}

// track takes a step, emitted or existing, into the generator's state: the Session it starts, the attempt a
// turn makes, the operations a prewarm starts and the write it leaves held when its host is lost, the held
// writes a release answers. An op that makes something a later op needs (a new simulate.GenNeed) extends it
// and holds.
func (g *gen) track(st simulate.Step) {
	if g.table().startsSession[st.Op] {
		g.sessions = append(g.sessions, st.Session)
	}
	switch st.Op {
	case simulate.OpTurn:
		// Only the turns of Sessions started before (a change earlier in the same variation may have
		// deleted a start; the result is validated, but the generator must not offer a retry of them).
		if slices.Contains(g.sessions, st.Session) {
			g.attempts[st.Session] = append(g.attempts[st.Session], st.Attempt)
		}
	case simulate.OpPrewarm:
		if st.Fault != nil && st.Fault.Kind == simulate.FaultHostLoss && len(st.Double) > 0 {
			g.held = true
			g.lost = append(g.lost, g.ops+1)
		}
		g.ops += st.Boxes
	case simulate.OpRelease:
		g.held = false
	}
}
