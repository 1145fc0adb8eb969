package simulate

import (
	"fmt"
	"sort"
)

// opSpec is everything the kit knows about one op: its name, the fields it requires and allows, a doc line,
// the checks beyond field presence, and how the platform plays it. Each op family registers its specs in its
// own file (ops_session.go, ops_turn.go, ops_agent.go, ops_host.go); runStep dispatches through the registry,
// and TestOpRegistryComplete fails for a spec without a run function.
type opSpec struct {
	name     string
	required []string
	allowed  []string
	doc      string
	// notes, by field, say more about a field in the op table (a default, a range).
	notes map[string]string
	// startsSession says the op starts the Session it names; needsSession that the Session must be started by
	// an earlier step.
	startsSession, needsSession bool
	// validate, when set, checks (and may default) the op's own values; it returns a problem or "".
	validate func(st *Step) string
	// run plays the step.
	run func(p *platform, st *Step)
	// gen is how the explore generator draws the op; nil means it never does, and notGenerated says why.
	gen          *Gen
	notGenerated string
	// simplify, when set, gives the step simpler values that keep it a step of the same op (the shrinker
	// tries it once per step through Step.Simplified); ops with nothing to simplify leave it nil.
	simplify func(st *Step)
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

// Gen is how often the explore generator draws an op.
type Gen struct {
	// Weight is the op's share of each draw among the ops whose Need holds.
	Weight int
	// LostWeight, when set, replaces Weight once an operation was lost with its host (so that recovering it
	// and releasing what was held become likelier).
	LostWeight int
	// Need is what must exist first.
	Need GenNeed
}

// GenOp is an op the explore generator draws, with how it draws it.
type GenOp struct {
	Name string
	Gen
}

// Generated returns the ops exploration draws, in opOrder: the order in which the generator lays out their
// weights, so that the same seed gives the same scenarios.
func Generated() []GenOp {
	var out []GenOp
	for _, name := range opOrder {
		if s := opRegistry[name]; s.gen != nil {
			out = append(out, GenOp{Name: name, Gen: *s.gen})
		}
	}
	return out
}

// NotGenerated returns the ops exploration never draws, each with the reason.
func NotGenerated() map[string]string {
	out := map[string]string{}
	for name, s := range opRegistry {
		if s.gen == nil {
			out[name] = s.notGenerated
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

// registerOps adds specs to the registry; a duplicate name is a programming error.
func registerOps(specs ...*opSpec) {
	for _, s := range specs {
		if _, dup := opRegistry[s.name]; dup {
			panic(fmt.Sprintf("simulate: op %q registered twice", s.name))
		}
		opRegistry[s.name] = s
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
