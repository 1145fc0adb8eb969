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

// OpDoc is the documentation of one op, for docs/scenarios.md.
type OpDoc struct {
	Name     string
	Required []string
	Allowed  []string
	Doc      string
}

// OpDocs returns the documentation of every op, sorted by name.
func OpDocs() []OpDoc {
	var out []OpDoc
	for _, name := range Ops() {
		s := opRegistry[name]
		out = append(out, OpDoc{Name: s.name, Required: s.required, Allowed: s.allowed, Doc: s.doc})
	}
	return out
}
