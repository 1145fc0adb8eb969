package simulate

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// allOps are the op constants; an op constant missing from the registry, or a spec missing its run function,
// fails TestOpRegistryComplete.
var allOps = []string{OpPrewarm, OpClaim, OpColdStart, OpReattach, OpReplaceSandbox, OpTurn, OpRetry, OpAdvance,
	OpReadUserActions, OpPerformUserAction, OpRecover, OpRelease, OpHostLoss, OpConfigChange, OpRefreshInputs, OpSetConsent}

func TestOpRegistryComplete(t *testing.T) {
	want := slices.Clone(allOps)
	slices.Sort(want)
	if got := Ops(); !slices.Equal(got, want) {
		t.Fatalf("registered ops %v, op constants %v", got, want)
	}
	order := slices.Clone(opOrder)
	slices.Sort(order)
	if !slices.Equal(order, want) {
		t.Fatalf("opOrder (the documented order) %v, op constants %v", opOrder, want)
	}
	for _, name := range Ops() {
		s := opRegistry[name]
		if s.run == nil {
			t.Errorf("op %s has no run function", name)
		}
		if s.doc == "" {
			t.Errorf("op %s has no doc line", name)
		}
		if s.startsSession && s.needsSession {
			t.Errorf("op %s both starts and needs a Session", name)
		}
		switch {
		case s.gen == nil && s.notGenerated == "":
			t.Errorf("op %s has no generator weight and no notGenerated reason", name)
		case s.gen != nil && s.notGenerated != "":
			t.Errorf("op %s has a generator weight and a notGenerated reason (%s)", name, s.notGenerated)
		case s.gen != nil && (s.gen.Weight <= 0 || s.gen.LostWeight < 0):
			t.Errorf("op %s has generator weights %+v; a generated op needs a positive weight", name, *s.gen)
		}
		for _, f := range append(slices.Clone(s.required), s.allowed...) {
			if !slices.Contains(stepFieldNames, f) {
				t.Errorf("op %s names field %q, which Step does not have", name, f)
			}
		}
	}
}

// TestSimplified: each op's simplify hook gives simpler values of that op only, and a step already simple (or
// of an op without a hook) comes back equal, so the shrinker spends no run on it.
func TestSimplified(t *testing.T) {
	for _, c := range []struct {
		name     string
		in, want Step
	}{
		{"turn kept live with images via the console",
			Step{Op: OpTurn, Session: "s1", Attempt: "a1", LiveFor: LiveFor{Seconds: 600}, Images: 2, Via: "console", Fault: &Fault{Kind: FaultCancel}},
			Step{Op: OpTurn, Session: "s1", Attempt: "a1", Fault: &Fault{Kind: FaultCancel}}},
		{"retry kept live",
			Step{Op: OpRetry, Session: "s1", Attempt: "a1", LiveFor: LiveFor{Seconds: 5}, Via: "api", Replica: "r2"},
			Step{Op: OpRetry, Session: "s1", Attempt: "a1", Replica: "r2"}},
		{"prewarm of three boxes", Step{Op: OpPrewarm, Agent: "agent-1", Boxes: 3}, Step{Op: OpPrewarm, Agent: "agent-1", Boxes: 1}},
		{"prewarm of no box", Step{Op: OpPrewarm, Agent: "agent-1"}, Step{Op: OpPrewarm, Agent: "agent-1"}},
		{"advance of ten minutes", Step{Op: OpAdvance, Seconds: 600}, Step{Op: OpAdvance, Seconds: 60}},
		{"advance of half a minute", Step{Op: OpAdvance, Seconds: 30}, Step{Op: OpAdvance, Seconds: 30}},
		{"claim (no hook)", Step{Op: OpClaim, Session: "s1", Agent: "agent-1", Principal: "bob", Replica: "r2"},
			Step{Op: OpClaim, Session: "s1", Agent: "agent-1", Principal: "bob", Replica: "r2"}},
		{"unknown op", Step{Op: "fly", Seconds: 600}, Step{Op: "fly", Seconds: 600}},
	} {
		got := c.in.Simplified()
		if !got.Equal(c.want) {
			t.Errorf("%s: Simplified() = %+v, want %+v", c.name, got, c.want)
		}
		if c.in.Fault != nil && got.Fault == c.in.Fault {
			t.Errorf("%s: the simplified step shares its fault with the original", c.name)
		}
	}
	sc := &Scenario{Name: "x", Replicas: 2, Agents: []AgentSpec{{ID: "agent-1"}},
		Steps: []Step{{Op: OpColdStart, Session: "s1", Agent: "agent-1", Principal: "alice"},
			{Op: OpTurn, Session: "s1", Attempt: "a1", LiveFor: LiveFor{Seconds: 600}, Images: 1, Via: "console"}}}
	sc.Steps[1] = sc.Steps[1].Simplified()
	if err := sc.Validate(); err != nil {
		t.Errorf("a simplified scenario does not validate: %v", err)
	}
}

func TestStepEqual(t *testing.T) {
	base := Step{Op: OpTurn, Session: "s1", Attempt: "a1", Fault: &Fault{Kind: FaultCancel}, Double: []DoubleFault{{Kind: DoubleHold}}}
	same := base
	f := *base.Fault
	same.Fault = &f
	same.Double = slices.Clone(base.Double)
	if !base.Equal(same) {
		t.Errorf("a deep copy is not equal")
	}
	for name, mod := range map[string]func(*Step){
		"fault removed":  func(s *Step) { s.Fault = nil },
		"fault kind":     func(s *Step) { s.Fault = &Fault{Kind: FaultTimeout} },
		"double removed": func(s *Step) { s.Double = nil },
		"double kind":    func(s *Step) { s.Double = []DoubleFault{{Kind: DoubleDelay}} },
		"via":            func(s *Step) { s.Via = "console" },
		"live_for":       func(s *Step) { s.LiveFor = LiveFor{Seconds: 5} },
	} {
		c := base.Clone()
		mod(&c)
		if base.Equal(c) {
			t.Errorf("%s: still equal", name)
		}
	}
	empty := Step{Op: OpRelease, Double: []DoubleFault{}}
	if !empty.Equal(Step{Op: OpRelease}) {
		t.Errorf("an empty and a missing double list differ")
	}
}

func TestCloneIsDeep(t *testing.T) {
	sc := &Scenario{Name: "x", Config: map[string]any{"agent": map[string]any{"model": "m"}},
		Principals: map[string]Principal{"alice": {}}, Steps: []Step{{Op: OpPrewarm, Fault: &Fault{Kind: FaultTimeout}, Double: []DoubleFault{{Kind: DoubleHold}}}}}
	c := sc.Clone()
	c.Config["agent"].(map[string]any)["model"] = "changed"
	c.Principals["bob"] = Principal{}
	c.Steps[0].Fault.Kind = FaultCancel
	c.Steps[0].Double[0].Kind = DoubleDrop
	if sc.Config["agent"].(map[string]any)["model"] != "m" || len(sc.Principals) != 1 ||
		sc.Steps[0].Fault.Kind != FaultTimeout || sc.Steps[0].Double[0].Kind != DoubleHold {
		t.Errorf("the clone shares state with the original: %+v", sc)
	}
}

// TestScenariosDocOpTableIsCurrent fails when the op table of docs/scenarios.md is not the one the registry
// generates (run `go run ./internal/tools/gendocs`).
func TestScenariosDocOpTableIsCurrent(t *testing.T) {
	doc, err := os.ReadFile("../../docs/scenarios.md")
	if err != nil {
		t.Fatal(err)
	}
	want, err := ReplaceOpsTable(doc)
	if err != nil {
		t.Fatal(err)
	}
	if string(doc) != string(want) {
		t.Errorf("docs/scenarios.md's op table is stale; run `go run ./internal/tools/gendocs`. want:\n%s", OpsTable())
	}
	for _, name := range Ops() {
		if !strings.Contains(string(doc), "| `"+name+"` |") {
			t.Errorf("op %s is not documented in docs/scenarios.md", name)
		}
	}
}

func TestReplicaNames(t *testing.T) {
	for i := 1; i <= 16; i++ {
		if got, ok := ParseReplica(ReplicaName(i)); !ok || got != i {
			t.Errorf("ParseReplica(ReplicaName(%d)) = %d, %v", i, got, ok)
		}
	}
	for _, bad := range []string{"r0", "r01", "x1", "r", "r-1"} {
		if _, ok := ParseReplica(bad); ok {
			t.Errorf("ParseReplica(%q) accepted", bad)
		}
	}
	for _, c := range []struct {
		i, n int
		want string
	}{{1, 2, "r1"}, {2, 2, "r2"}, {3, 2, "r1"}, {4, 3, "r1"}, {5, 3, "r2"}, {2, 0, "r1"}} {
		if got := FoldReplica(c.i, c.n); got != c.want {
			t.Errorf("FoldReplica(%d, %d) = %s, want %s", c.i, c.n, got, c.want)
		}
	}
}
