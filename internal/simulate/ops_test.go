package simulate

import (
	"os"
	"reflect"
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
		for _, f := range append(slices.Clone(s.required), s.allowed...) {
			if !slices.Contains(stepFieldNames, f) {
				t.Errorf("op %s names field %q, which Step does not have", name, f)
			}
		}
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

// stepFieldNames are the YAML names of Step's fields.
var stepFieldNames = func() []string {
	var out []string
	t := reflect.TypeOf(Step{})
	for i := 0; i < t.NumField(); i++ {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ","); name != "" && name != "-" {
			out = append(out, name)
		}
	}
	return out
}()

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
