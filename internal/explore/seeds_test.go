package explore

import (
	"math/rand"
	"reflect"
	"testing"

	"github.com/astrabox-dev/astrabox/internal/harness"
	"github.com/astrabox-dev/astrabox/internal/simulate"
)

// reaching is a judged history whose prepare_turn reached the given lines of provider.py.
func reaching(lines ...int) *simulate.History {
	rep := &harness.CoverageReport{Hits: []harness.CoverageHits{{Key: "prepare_turn", Lines: map[string][]int{"provider.py": lines}}}}
	return &simulate.History{Scenario: "s", Coverage: []simulate.ReplicaCoverage{{Replica: "r1", Report: rep}}}
}

// withSteps is a scenario of n steps (the length is what makes a seed the representative of a feature).
func withSteps(n int) *simulate.Scenario {
	sc := Generate(1, 0)
	for len(sc.Steps) < n {
		sc.Steps = append(sc.Steps, simulate.Step{Op: simulate.OpAdvance, Seconds: 30})
	}
	sc.Steps = sc.Steps[:n]
	return sc
}

// TestGuideFavoursTheShortestSeedOfRareFeatures checks the corpus's choice of seeds: a scenario joins only
// when it reached something new; each feature is represented by the shortest seed that reached it; and the
// seed representing a feature few scenarios reached is varied far more often than the seed representing
// features every scenario reaches, while a seed that represents nothing is varied only by the uniform share.
func TestGuideFavoursTheShortestSeedOfRareFeatures(t *testing.T) {
	g := newGuide(1, nil)
	if !g.observe(withSteps(6), reaching(1, 2, 3)) {
		t.Fatal("the first scenario did not join the corpus")
	}
	if !g.observe(withSteps(8), reaching(1, 2, 3, 4)) {
		t.Fatal("a scenario reaching line 4 first did not join")
	}
	if g.observe(withSteps(3), reaching(1, 2)) {
		t.Fatal("a scenario reaching nothing new joined")
	}
	// A shorter seed reaching 1-3 and a new line takes over 1-3: the first seed now represents nothing.
	if !g.observe(withSteps(4), reaching(1, 2, 3, 5)) {
		t.Fatal("a scenario reaching line 5 first did not join")
	}
	for i := 0; i < 40; i++ {
		g.observe(withSteps(5), reaching(1, 2, 3, 5))
	}
	if g.favoured() != 2 || len(g.seeds) != 3 || len(g.hits) != 5 {
		t.Fatalf("favoured %d of %d seeds, %d features", g.favoured(), len(g.seeds), len(g.hits))
	}
	w := g.weights()
	if w[0] != 0 || w[1] != 1 || w[2] >= w[1] {
		t.Fatalf("weights %v: want none for the superseded seed, 1 for the seed of line 4 (reached once), less for the common one", w)
	}
	picked := map[int]int{}
	rng := rand.New(rand.NewSource(3))
	for i := 0; i < 2000; i++ {
		picked[g.pick(rng)]++
	}
	if picked[1] < 3*picked[2] || picked[0] == 0 || picked[0] > 300 {
		t.Errorf("picks by seed %v: the seed of the rare line should dominate, the superseded one appear only by the uniform share", picked)
	}
	// The same observations give the same choices.
	h := newGuide(1, nil)
	h.observe(withSteps(6), reaching(1, 2, 3))
	h.observe(withSteps(8), reaching(1, 2, 3, 4))
	h.observe(withSteps(3), reaching(1, 2))
	h.observe(withSteps(4), reaching(1, 2, 3, 5))
	for i := 0; i < 40; i++ {
		h.observe(withSteps(5), reaching(1, 2, 3, 5))
	}
	if !reflect.DeepEqual(g.weights(), h.weights()) || !reflect.DeepEqual(g.next(50), h.next(50)) {
		t.Error("the same observations gave different weights or choices")
	}
}

// TestOrderFeaturesNameTwoCallbacksInARow checks the orders of callbacks a history shows: plan calls are left
// out, each pair names what both callbacks did (a recover's answer included) and whether they shared a
// replica and an operation, and none of them counts as a line reached.
func TestOrderFeaturesNameTwoCallbacksInARow(t *testing.T) {
	call := func(m simulate.Callback, replica, op string, answer bool) *simulate.Event {
		c := &simulate.CallRecord{Method: m, Replica: replica, Outcome: simulate.OutcomeReturned, Ctx: simulate.CallContext{Operation: op}}
		if m == simulate.CallRecover {
			c.Result = &harness.Result{Type: simulate.KindBool, Value: answer}
		}
		return &simulate.Event{Call: c}
	}
	h := &simulate.History{Events: []*simulate.Event{
		call(simulate.CallPlan, "r1", "", false),
		call(simulate.CallRecover, "r1", "op-1", true),
		call(simulate.CallPlan, "r2", "", false),
		call(simulate.CallRecover, "r1", "op-2", true),
		call(simulate.CallRecover, "r2", "op-2", false),
	}}
	got := orderFeatures(h)
	want := map[feature]bool{
		{key: keyOrder, path: "recover:returned:true > recover:returned:true", n: orderSameReplica}:  true,
		{key: keyOrder, path: "recover:returned:true > recover:returned:false", n: orderSameSession}: true,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("order features %v, want %v", got, want)
	}
	g := newGuide(1, nil)
	g.observe(withSteps(3), h)
	if g.covered != 0 || len(g.hits)-g.states != 2 || len(g.seeds) != 1 {
		t.Errorf("orders counted as lines reached (%d) or not as features (%d)", g.covered, len(g.hits)-g.states)
	}
	g = newGuide(1, nil)
	g.linesOnly = true
	if g.observe(withSteps(3), h) {
		t.Error("a history with no line reached joined a corpus guided by lines only")
	}
}
