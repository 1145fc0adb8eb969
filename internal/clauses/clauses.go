// Package clauses holds the platform's contract clause by clause: the repository's copy of spec/clauses.md,
// embedded in the binary and parsed once into typed records. It is the one place the clause IDs, owners and
// texts live; `conformance explain`, docs/checks.md and the structure tests all read it from here. Refresh
// clauses.md from the platform's spec when the contract changes; the tests then say what else to add.
//
// The package imports nothing internal, so every layer of the kit may use it.
package clauses

import (
	_ "embed"
	"fmt"
	"strings"
	"sync"
)

// Owner says who must keep a clause.
type Owner string

// The owners of a clause, as spec/clauses.md writes them in its owner column.
const (
	// OwnerProvider: a conformance check must detect a provider that breaks the clause.
	OwnerProvider Owner = "provider"
	// OwnerPlatform: the simulator must behave exactly so; the kit plays the clause rather than judging it.
	OwnerPlatform Owner = "platform"
)

// Clause is one normative sentence of the contract with its stable ID.
type Clause struct {
	// ID is the stable clause ID, such as PLAN-NO-IO.
	ID string
	// Owner says who must keep it.
	Owner Owner
	// Section is the heading of the table the clause sits in, such as "Turns".
	Section string
	// Text is the clause as the spec writes it, Markdown code spans included.
	Text string
	// Line is the 1-based line of the clause's row in the file it was parsed from.
	Line int
}

// Plain is the clause's text for a terminal: the spec's text with its code-span backticks removed.
func (c Clause) Plain() string { return strings.ReplaceAll(c.Text, "`", "") }

// SourceName is the name parse errors give the embedded copy.
const SourceName = "internal/clauses/clauses.md"

//go:embed clauses.md
var source []byte

// Source returns the embedded copy of spec/clauses.md as it is written (a copy; callers may change it, for
// example to test what a new clause needs).
func Source() []byte { return append([]byte(nil), source...) }

var parsed = sync.OnceValues(func() ([]Clause, error) { return Parse(SourceName, source) })

// All returns every clause of the embedded spec in the spec's order. The embedded copy is part of the build,
// and this package's tests parse it, so a malformed copy is a broken build: All panics on it rather than let
// a command run without its contract.
func All() []Clause {
	cs, err := parsed()
	if err != nil {
		panic(fmt.Sprintf("the embedded clause list: %v", err))
	}
	return append([]Clause(nil), cs...)
}

// Lookup returns the clause with the given ID from the embedded spec.
func Lookup(id string) (Clause, bool) {
	All() // panics on a broken build, as All does
	cs, _ := parsed()
	for _, c := range cs {
		if c.ID == id {
			return c, true
		}
	}
	return Clause{}, false
}
