package simulate

import (
	"fmt"
	"slices"
	"sort"
)

// opSpec is everything the kit knows about one op, in one record (as go/analysis's Analyzer is everything a
// driver knows about an analysis): its name, the fields it requires and allows, a doc line, whether it is
// about a Session, the provider callbacks it makes the platform call, the checks beyond field presence, how
// the platform plays it, how exploration draws and writes it, and how the shrinker simplifies it. Each op
// family registers its specs in its own file (ops_session.go, ops_turn.go, ops_agent.go, ops_host.go);
// runStep dispatches through the registry, Validate checks steps by it, docs/scenarios.md's op table is
// rendered from it, and internal/explore derives its tables from Registered. TestOpRegistryComplete says
// what a spec lacks.
type opSpec struct {
	name     string
	required []string
	allowed  []string
	doc      string
	// notes, by field, say more about a field in the op table (a default, a range).
	notes map[string]string
	// session says whether the op starts the Session it names, needs one an earlier step started, or is not
	// about a Session.
	session SessionUse
	// calls are the provider callbacks a step of the op makes the platform call (besides plan, which every
	// replica calls on its first step), in the order it calls them; nil when it calls none.
	calls []Callback
	// validate, when set, checks (and may default) the op's own values; it returns a problem or "".
	validate func(st *Step) string
	// run plays the step.
	run func(p *platform, st *Step)
	// gen is how the explore generator draws and writes the op; nil means it never does, and notGenerated
	// says why.
	gen          *Gen
	notGenerated string
	// simplify, when set, gives the step simpler values that keep it a step of the same op (the shrinker
	// tries it once per step through Step.Simplified); ops with nothing to simplify leave it nil.
	simplify func(st *Step)
}

// SessionUse says how an op relates to a Session.
type SessionUse int

// How an op relates to a Session.
const (
	// SessionNone: the op is not about a Session.
	SessionNone SessionUse = iota
	// SessionStarts: the op starts the Session it names.
	SessionStarts
	// SessionNeeds: the op names a Session an earlier step started.
	SessionNeeds
)

// String names the use as the spec sets it.
func (u SessionUse) String() string {
	switch u {
	case SessionNone:
		return "SessionNone"
	case SessionStarts:
		return "SessionStarts"
	case SessionNeeds:
		return "SessionNeeds"
	}
	return fmt.Sprintf("SessionUse(%d)", int(u))
}

// GenNeed is what must exist before the explore generator may draw an op.
type GenNeed int

// What an op needs before it is drawn.
const (
	// NeedNothing: the op can come first.
	NeedNothing GenNeed = iota
	// NeedSession: a Session started by an earlier step.
	NeedSession
	// NeedAttempt: an attempt of an earlier turn, to retry.
	NeedAttempt
	// NeedOperation: an operation an earlier prewarm started, to recover.
	NeedOperation
	// NeedHeld: a request the double holds, to release.
	NeedHeld
)

// Gen is how the explore generator draws an op and writes its step.
type Gen struct {
	// Weight is the op's share of each draw among the ops whose Need holds.
	Weight int
	// LostWeight, when set, replaces Weight once an operation was lost with its host (so that recovering it
	// and releasing what was held become likelier).
	LostWeight int
	// Need is what must exist first.
	Need GenNeed
	// Emit writes a step of the op from what the generator offers; it may assume Need holds. It must draw
	// from d in the same order every time, so that a seed gives the same scenarios.
	Emit func(d Draw) Step
}

// Draw is what the explore generator offers an op's emitter: its random source and what the scenario so far
// holds. The generator (internal/explore) implements it and takes each emitted step into its state itself
// (a Session a step starts, the attempt a turn makes, the operations a prewarm starts, a held write).
type Draw interface {
	// Intn returns a number in [0, n) from the generator's random source.
	Intn(n int) int
	// Chance returns true with probability p.
	Chance(p float64) bool
	// Replica draws one of the scenario's replicas.
	Replica() string
	// Agent is the scenario's Agent.
	Agent() string
	// Principal draws one of the scenario's principals.
	Principal() string
	// Session draws a Session an earlier step started.
	Session() string
	// NewSession names a Session no step started yet.
	NewSession() string
	// NewAttempt names an attempt no step made yet.
	NewAttempt() string
	// Attempts lists each earlier turn's Session and attempt, by Session in the order they started.
	Attempts() [][2]string
	// Operations is how many operations earlier prewarms started (numbered op-1 up).
	Operations() int
	// Lost lists the operations lost with their host while their write was held.
	Lost() []int
}

// Op is what a driver of the simulator (the explore generator, the docs, the structure tests) reads of an
// op's spec.
type Op struct {
	Name string
	Doc  string
	// Session says how the op relates to a Session.
	Session SessionUse
	// Calls are the callbacks a step of the op makes the platform call, besides plan.
	Calls []Callback
	// Gen is how exploration draws the op; nil when it never does, and NotGenerated says why.
	Gen          *Gen
	NotGenerated string
}

// Registered returns every registered op in opOrder, then any op opOrder does not name, by name.
func Registered() []Op {
	var out []Op
	for _, s := range orderedSpecs() {
		out = append(out, Op{Name: s.name, Doc: s.doc, Session: s.session, Calls: slices.Clone(s.calls), Gen: s.gen, NotGenerated: s.notGenerated})
	}
	return out
}

// orderedSpecs are the registered specs in opOrder, then those opOrder does not name, by name; a name in
// opOrder that is not registered is left out (TestOpRegistryComplete names it).
func orderedSpecs() []*opSpec {
	var out []*opSpec
	for _, name := range opOrder {
		if s := opRegistry[name]; s != nil {
			out = append(out, s)
		}
	}
	for _, name := range Ops() {
		if !slices.Contains(opOrder, name) {
			out = append(out, opRegistry[name])
		}
	}
	return out
}

// GenOp is an op the explore generator draws, with how it draws it.
type GenOp struct {
	Name string
	Gen
}

// Generated returns the ops exploration draws, in the order of Registered: the order in which the generator
// lays out their weights, so that the same seed gives the same scenarios. An op with a weight but no
// emitter is left out (TestOpRegistryComplete names it), so that a half-written spec cannot crash
// generation.
func Generated() []GenOp {
	var out []GenOp
	for _, s := range orderedSpecs() {
		if s.gen != nil && s.gen.Emit != nil {
			out = append(out, GenOp{Name: s.name, Gen: *s.gen})
		}
	}
	return out
}

// Simplified returns a copy of the step with simpler values, as its op's simplify hook gives them (the
// shrinker keeps the copy when the scenario still fails); a step whose op has no hook is returned as it is.
func (st Step) Simplified() Step {
	c := st.Clone()
	if s := opRegistry[st.Op]; s != nil && s.simplify != nil {
		s.simplify(&c)
	}
	return c
}

// opRegistry holds every op's spec by name; registerOps fills it from each family's init.
var opRegistry = map[string]*opSpec{}

// registryProblems are the mistakes registerOps found (a spec without a name, a name registered twice). It
// records them rather than panicking in init, which would crash every test of every package that imports
// simulate before TestOpRegistryComplete could name the mistake.
var registryProblems []string

// registerOps adds specs to the registry; the first of two specs with one name wins, and the second is a
// registry problem.
func registerOps(specs ...*opSpec) {
	for _, s := range specs {
		switch _, dup := opRegistry[s.name]; {
		case s.name == "":
			registryProblems = append(registryProblems, fmt.Sprintf("an op spec has no name (doc %q): give it its Op constant", s.doc))
		case dup:
			registryProblems = append(registryProblems, fmt.Sprintf("op %q is registered twice: remove one of its specs", s.name))
		default:
			opRegistry[s.name] = s
		}
	}
}

// Ops returns the names of every step, sorted.
func Ops() []string {
	out := make([]string, 0, len(opRegistry))
	for op := range opRegistry {
		out = append(out, op)
	}
	sort.Strings(out)
	return out
}

// String names the need as the spec sets it.
func (n GenNeed) String() string {
	switch n {
	case NeedNothing:
		return "NeedNothing"
	case NeedSession:
		return "NeedSession"
	case NeedAttempt:
		return "NeedAttempt"
	case NeedOperation:
		return "NeedOperation"
	case NeedHeld:
		return "NeedHeld"
	}
	return fmt.Sprintf("GenNeed(%d)", int(n))
}

// GenProblems says what keeps op from being drawn safely, each problem naming what its spec must gain: a
// generated op needs a positive weight and an emitter, and its emitter must write a step of op and draw
// nothing its Need does not promise (a Session, an attempt or an operation that may not exist yet). It runs
// the emitter on a probe, with every chance missed and every chance taken, and never panics: the explore
// generator leaves an op with problems out of its draw, and TestOpRegistryComplete reports them, so that a
// half-written spec fails its structure test instead of crashing unrelated tests. Nil for an op exploration
// never draws.
func GenProblems(op Op) []string {
	if op.Gen == nil {
		return nil
	}
	var out []string
	if op.Gen.Weight <= 0 || op.Gen.LostWeight < 0 {
		out = append(out, fmt.Sprintf("op %s has generator weights %d (lost %d): a generated op needs a positive Gen.Weight", op.Name, op.Gen.Weight, op.Gen.LostWeight))
	}
	if op.Gen.Emit == nil {
		return append(out, fmt.Sprintf("op %s has a generator weight but no Gen.Emit: write the function that writes its step from a Draw", op.Name))
	}
	for _, yes := range []bool{false, true} {
		p := &probe{yes: yes}
		st, panicked := p.run(op.Gen.Emit)
		switch {
		case panicked != "":
			out = append(out, fmt.Sprintf("op %s's emitter panicked (%s) on a scenario that holds what its Gen.Need (%v) promises", op.Name, panicked, op.Gen.Need))
		case st.Op != op.Name:
			out = append(out, fmt.Sprintf("op %s's emitter wrote a step of op %q: set the step's Op to %s", op.Name, st.Op, op.Name))
		}
		for _, u := range []struct {
			used  bool
			what  string
			needs []GenNeed
		}{
			{p.session, "a Session (Draw.Session)", []GenNeed{NeedSession, NeedAttempt}},
			{p.attempts, "an earlier attempt (Draw.Attempts)", []GenNeed{NeedAttempt}},
			{p.operations, "an earlier operation (Draw.Operations)", []GenNeed{NeedOperation}},
		} {
			if u.used && !slices.Contains(u.needs, op.Gen.Need) {
				out = append(out, fmt.Sprintf("op %s's emitter draws %s but its Gen.Need is %v, so the generator may draw it before one exists: set Gen.Need to %v", op.Name, u.what, op.Gen.Need, u.needs[0]))
			}
		}
		if p.empty {
			out = append(out, fmt.Sprintf("op %s's emitter asks Draw.Intn for a number below 0 or 1", op.Name))
		}
	}
	return slices.Compact(out)
}

// probe is a Draw that records what an emitter drew: a scenario that started Session s1, turned its
// attempt t1 and prewarmed op-1 (lost with its host), whose every choice is the first and whose every
// chance is taken (yes) or missed.
type probe struct {
	yes                           bool
	session, attempts, operations bool
	empty                         bool
}

func (p *probe) run(emit func(Draw) Step) (st Step, panicked string) {
	defer func() {
		if r := recover(); r != nil {
			panicked = fmt.Sprint(r)
		}
	}()
	return emit(p), ""
}

func (p *probe) Intn(n int) int {
	if n <= 0 {
		p.empty = true
	}
	return 0
}
func (p *probe) Chance(float64) bool   { return p.yes }
func (p *probe) Replica() string       { return ReplicaName(1) }
func (p *probe) Agent() string         { return "agent-1" }
func (p *probe) Principal() string     { return "alice" }
func (p *probe) Session() string       { p.session = true; return "s1" }
func (p *probe) NewSession() string    { return "s2" }
func (p *probe) NewAttempt() string    { return "t2" }
func (p *probe) Attempts() [][2]string { p.attempts = true; return [][2]string{{"s1", "t1"}} }
func (p *probe) Operations() int       { p.operations = true; return 1 }
func (p *probe) Lost() []int           { return []int{1} }
