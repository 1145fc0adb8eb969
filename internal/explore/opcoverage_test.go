package explore

import (
	"math/rand"
	"slices"
	"testing"

	"github.com/astrabox-dev/astrabox/internal/simulate"
)

// TestEveryOpIsGeneratedOrExcluded fails when an op the registry says exploration generates is never drawn
// (within the first scenarios of a few seeds) or is not among the generator's ops, or when an op is drawn
// that the registry says is not generated.
func TestEveryOpIsGeneratedOrExcluded(t *testing.T) {
	seen := map[string]bool{}
	for seed := int64(1); seed <= 3; seed++ {
		for i := 0; i < 200; i++ {
			for _, st := range Generate(seed, i).Steps {
				seen[st.Op] = true
			}
		}
	}
	var drawn []string
	for _, op := range ops.generated {
		drawn = append(drawn, op.Name)
	}
	for _, op := range simulate.Registered() {
		switch {
		case op.Gen != nil && !slices.Contains(drawn, op.Name):
			t.Errorf("op %s has a generator weight but the generator does not draw it: %v (simulate's TestOpRegistryComplete says the same)", op.Name, simulate.GenProblems(op))
		case op.Gen != nil && !seen[op.Name]:
			t.Errorf("op %s is generated but 600 scenarios never drew it: raise its Gen.Weight or loosen its Gen.Need", op.Name)
		case op.Gen == nil && seen[op.Name]:
			t.Errorf("op %s is generated but the registry says it is not (%s)", op.Name, op.NotGenerated)
		}
	}
}

// fakeOp is an op of a test's own: about a Session, calling prepare_turn, drawn once a Session exists.
func fakeOp() simulate.Op {
	return simulate.Op{Name: "fake_nudge", Doc: "A test's op.", Session: simulate.SessionNeeds, Calls: []simulate.Callback{simulate.CallPrepareTurn},
		Gen: &simulate.Gen{Weight: 40, Need: simulate.NeedSession, Emit: func(d simulate.Draw) simulate.Step {
			return simulate.Step{Op: "fake_nudge", Session: d.Session(), Replica: d.Replica()}
		}}}
}

// TestANewOpFlowsIntoExploresTables proves by construction that a new op is written in its spec alone: an
// op added to the registered ops (here a test's fake) is in every table explore derives (the generator's
// draw, the callbacks aim boosts, the model's Session steps) and the generator draws it with its own
// emitter, while the tables of the registered ops alone are the ones explore uses.
func TestANewOpFlowsIntoExploresTables(t *testing.T) {
	registered := simulate.Registered()
	tb := deriveTables(append(slices.Clone(registered), fakeOp()))
	if i := slices.IndexFunc(tb.generated, func(o simulate.GenOp) bool { return o.Name == "fake_nudge" }); i < 0 || tb.generated[i].Weight != 40 || tb.generated[i].Emit == nil {
		t.Errorf("the fake op is not among the generator's ops with its weight and emitter: %+v", tb.generated)
	}
	if !slices.Contains(tb.callbackOps[simulate.CallPrepareTurn], "fake_nudge") {
		t.Errorf("the fake op is not among the steps that call prepare_turn: %v", tb.callbackOps[simulate.CallPrepareTurn])
	}
	if !tb.sessionOps["fake_nudge"] {
		t.Errorf("the fake op is not among the model's Session steps: %v", tb.sessionOps)
	}
	if slices.ContainsFunc(ops.generated, func(o simulate.GenOp) bool { return o.Name == "fake_nudge" }) || ops.sessionOps["fake_nudge"] {
		t.Fatal("the fake op leaked into the registered ops' tables")
	}
	// The generator draws it, after a Session exists, with the fake's emitter.
	g := &gen{rng: rand.New(rand.NewSource(1)), replicas: 2, attempts: map[string][]string{}, tables: tb}
	n := 0
	for len(g.steps) < 200 {
		g.draw()
		if st := g.steps[len(g.steps)-1]; st.Op == "fake_nudge" {
			n++
			if !slices.Contains(g.sessions, st.Session) || st.Replica == "" {
				t.Fatalf("the fake op's step %+v is not its emitter's (Session %q not started)", st, st.Session)
			}
		}
	}
	if n < 20 {
		t.Errorf("the generator drew the fake op %d times in 200 steps with weight 40", n)
	}
	// An aim at prepare_turn boosts it with the turns.
	a := aim{implemented: []simulate.Callback{simulate.CallPrepareTurn}, seen: map[simulate.Callback]bool{}, observed: aimAfter}
	saved := callbackOps
	callbackOps = tb.callbackOps
	defer func() { callbackOps = saved }()
	if got := boostedOps(a.boost()); !slices.Equal(got, []string{"fake_nudge", simulate.OpRetry, simulate.OpTurn}) {
		t.Errorf("an aim at prepare_turn boosts %v, want the fake op with turn and retry", got)
	}
}

// TestAHalfWrittenOpDoesNotCrashGeneration: an op with a weight but no emitter, or whose emitter draws a
// Session its need does not promise, is left out of the draw instead of panicking (on the first scenario
// without a Session), so that the structure tests, not unrelated ones, say what it lacks.
func TestAHalfWrittenOpDoesNotCrashGeneration(t *testing.T) {
	noEmitter := simulate.Op{Name: "half", Doc: "A test's unfinished op.", Gen: &simulate.Gen{Weight: 1000}}
	early := fakeOp()
	early.Name, early.Gen.Need, early.Gen.Weight = "early", simulate.NeedNothing, 1000
	early.Gen.Emit = func(d simulate.Draw) simulate.Step { return simulate.Step{Op: "early", Session: d.Session()} }
	tb := deriveTables(append(simulate.Registered(), noEmitter, early))
	for _, name := range []string{"half", "early"} {
		if slices.ContainsFunc(tb.generated, func(o simulate.GenOp) bool { return o.Name == name }) {
			t.Errorf("op %s, whose generator spec has problems, is drawn", name)
		}
	}
	if len(tb.generated) != len(ops.generated) {
		t.Errorf("%d ops drawn, want the %d registered ones", len(tb.generated), len(ops.generated))
	}
	g := &gen{rng: rand.New(rand.NewSource(1)), replicas: 2, attempts: map[string][]string{}, tables: tb}
	for len(g.steps) < 50 {
		g.draw()
	}
}
