package simulate

import (
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// opConstants returns the Op* constants the package's own source declares (name -> value), read with
// go/parser, so that no hand-kept list of ops can fall behind: an op constant declared anywhere in simulate
// and not registered fails TestOpRegistryComplete.
func opConstants(t *testing.T) map[string]string {
	t.Helper()
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, sp := range gd.Specs {
				vs := sp.(*ast.ValueSpec)
				for i, n := range vs.Names {
					if len(n.Name) < 3 || !strings.HasPrefix(n.Name, "Op") || !unicode.IsUpper(rune(n.Name[2])) || i >= len(vs.Values) {
						continue
					}
					if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
						v, _ := strconv.Unquote(lit.Value)
						out[n.Name] = v
					}
				}
			}
		}
	}
	return out
}

// TestOpRegistryComplete is the op registry's structure test: each message names the op and what its spec
// (in ops_<family>.go) must gain, so that a new op is written by following it.
func TestOpRegistryComplete(t *testing.T) {
	for _, p := range registryProblems {
		t.Errorf("op registry: %s", p)
	}
	consts := opConstants(t)
	if len(consts) < 16 {
		t.Fatalf("found %d Op constants in the package's source; the parser missed them", len(consts))
	}
	for name, op := range consts {
		if opRegistry[op] == nil {
			t.Errorf("op constant %s (%q) has no spec: register an *opSpec for it with registerOps in its ops_<family>.go", name, op)
		}
	}
	for _, name := range opOrder {
		if opRegistry[name] == nil {
			t.Errorf("opOrder names %q, which no spec registers: register its spec or take it out of opOrder", name)
		}
	}
	if n := len(Registered()); n != len(opRegistry) {
		t.Errorf("Registered lists %d ops of %d registered", n, len(opRegistry))
	}
	for _, name := range Ops() {
		s := opRegistry[name]
		if !slices.Contains(slices.Collect(maps.Values(consts)), name) {
			t.Errorf("op %s has no Op constant: declare one and name the spec by it", name)
		}
		if s.run == nil {
			t.Errorf("op %s has no run function: set run, the function that plays its step", name)
		}
		if s.doc == "" {
			t.Errorf("op %s has no doc line: set doc, its row of docs/scenarios.md's op table", name)
		}
		switch {
		case s.gen == nil && s.notGenerated == "":
			t.Errorf("op %s has neither gen nor notGenerated: give it a Gen{Weight, Need, Emit} or the reason exploration never draws it", name)
		case s.gen != nil && s.notGenerated != "":
			t.Errorf("op %s has a generator weight and a notGenerated reason (%s): keep one", name, s.notGenerated)
		}
		for _, p := range GenProblems(Op{Name: name, Gen: s.gen}) {
			t.Error(p)
		}
		if s.gen != nil && s.session == SessionNeeds && s.gen.Need != NeedSession && s.gen.Need != NeedAttempt {
			t.Errorf("op %s needs a Session but the generator may draw it before one exists: set its Gen.Need to NeedSession", name)
		}
		requiresSession := slices.Contains(s.required, "session")
		if requiresSession != (s.session != SessionNone) {
			t.Errorf("op %s: session is %v but its required fields are %v; an op whose steps name a Session requires `session` and says whether it starts (SessionStarts) or needs (SessionNeeds) it", name, s.session, s.required)
		}
		for i, cb := range s.calls {
			switch {
			case !cb.Known():
				t.Errorf("op %s calls %q, which is not a callback", name, cb)
			case cb == CallPlan:
				t.Errorf("op %s lists plan among its calls; every replica calls plan on its first step, so no op lists it", name)
			case slices.Contains(s.calls[:i], cb):
				t.Errorf("op %s lists %s twice", name, cb)
			}
		}
		for _, f := range append(slices.Clone(s.required), s.allowed...) {
			if !slices.Contains(stepFieldNames, f) {
				t.Errorf("op %s names field %q, which Step does not have", name, f)
			}
		}
	}
}

// TestEmittersWriteValidStepsOfTheirOp checks each op's Gen.Emit: the step it writes is of its own op and
// valid after a scenario whose state its Need asks for, whichever way its chances fall.
func TestEmittersWriteValidStepsOfTheirOp(t *testing.T) {
	for _, op := range Generated() {
		for _, yes := range []bool{false, true} {
			st := op.Emit(&probe{yes: yes})
			if st.Op != op.Name {
				t.Errorf("op %s's emitter wrote a step of op %q", op.Name, st.Op)
				continue
			}
			sc := &Scenario{Name: "emit", Replicas: 2, Agents: []AgentSpec{{ID: "agent-1"}},
				Principals: map[string]Principal{"alice": {Consent: "granted"}, "bob": {Consent: "pending"}},
				Steps: []Step{{Op: OpColdStart, Session: "s1", Agent: "agent-1", Principal: "alice"},
					{Op: OpTurn, Session: "s1", Attempt: "t1"}, {Op: OpPrewarm, Agent: "agent-1", Boxes: 1}, st}}
			if err := sc.Validate(); err != nil {
				t.Errorf("op %s's emitter (chances taken: %v) wrote an invalid step %+v: %v", op.Name, yes, st, err)
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
