// Package conformance is the conformance suite: the table of checks (one or more per provider clause of the
// contract), the default scenarios they decide over, the secret canaries the kit plants, and the run that
// turns a provider project into a report.
package conformance

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/astrabox-dev/astrabox/internal/discovery"
	"github.com/astrabox-dev/astrabox/internal/harness"
	"github.com/astrabox-dev/astrabox/internal/report"
	"github.com/astrabox-dev/astrabox/internal/secrets"
	"github.com/astrabox-dev/astrabox/internal/simulate"
	"github.com/astrabox-dev/astrabox/internal/wrapper"
)

// Areas group checks in reports.
const (
	AreaDiscovery = "discovery"
	AreaPlan      = "plan"
	AreaSync      = "synchronize"
	AreaSession   = "session"
	AreaTurn      = "turn"
	AreaUser      = "user-actions"
	AreaGeneral   = "general"
	AreaLeak      = "secrets"
)

// Kind says what a check enforces.
type Kind string

// The kinds of check.
const (
	// KindClause (the zero value) is a check of contract clauses: Clauses names them (spec/clauses.md).
	KindClause Kind = ""
	// KindKitRule is the kit's own rule, not a platform clause: Clauses is empty and the ID starts with
	// KitRulePrefix. Such a rule protects the author's run (for example, that a CI run never reaches a real
	// system), and is documented in docs/checks.md as the kit's, not the platform's.
	KindKitRule Kind = "kit-rule"
)

// KitRulePrefix starts the ID of every kit rule.
const KitRulePrefix = "KIT-"

// KitRuleLabel stands where a kit rule's clauses would be shown.
const KitRuleLabel = "kit rule (no platform clause)"

// ClauseLabels are the check's clauses for display: its clause IDs, or KitRuleLabel for a kit rule.
func (c *Check) ClauseLabels() []string {
	if c.Kind == KindKitRule {
		return []string{KitRuleLabel}
	}
	return c.Clauses
}

// Check is one conformance check: its stable identity, the clauses it covers (or, for a kit rule, none),
// why it matters, and its decision over the evidence of a run. IDs are never reused.
type Check struct {
	ID       string
	Title    string
	Area     string
	Severity report.Severity
	// Kind is KindClause for a check of contract clauses, KindKitRule for the kit's own rule.
	Kind      Kind
	Clauses   []string
	Rationale string
	// Hint is a one-line fix hint shown under a failure.
	Hint string
	// Wrong and Right are short Python snippets for `astrabox conformance explain`.
	Wrong, Right string
	// WarningOnly explains why this clause can only be observed, not proven, from outside; such a check
	// reports warnings, never failures.
	WarningOnly string
	// Elsewhere, when set, says which other command decides this clause: a conformance run reports the check
	// as skipped with this reason instead of claiming it passed.
	Elsewhere string
	// HereWhen, when set, says whether this run decides the check after all although Elsewhere is set (the
	// project named what the other command checks, such as its image wrapper).
	HereWhen func(ev *Evidence) bool
	// Decide inspects the evidence and returns findings; none means the check held over what it saw.
	Decide func(ev *Evidence) []Finding
	// Needs says what the check must have seen to decide ("a retry of an attempt that already had
	// material"); Exercise measures it over the evidence. A result passes only when the requirement was met;
	// otherwise it is not_exercised (or not_applicable, when Exercise says the clause does not concern the
	// provider).
	Needs    string
	Exercise func(ev *Evidence) Exercise
	// Judges are the callbacks whose behaviour the check judges: when the provider defines none of them
	// itself, the result is not_applicable.
	Judges []simulate.Callback
	// Static marks a check decided from discovery and loading alone: it is judged even when no scenario
	// could run.
	Static bool
}

// Finding is one breach a check found.
type Finding struct {
	// Warning marks a finding that is not certain (the check observed something suspicious).
	Warning  bool
	Message  string
	Evidence []report.Evidence
	Location *report.Location
}

// Evidence is everything checks decide over: what loading the provider told, every scenario history, and
// the secrets to hunt for.
type Evidence struct {
	Project   string
	Load      *harness.LoadInfo
	Histories []*simulate.History
	Secrets   *secrets.Set
	// Material maps every material byte string and environment value the provider returned (also in
	// Secrets) to where it was returned ("file NAME from prepare_session of s1 (r1#1)").
	Material map[string]string
	// texts holds each distinct large material content once, as a string, for the checks that hunt it.
	texts interner
	// Config is the base Agent configuration (unsubstituted) and TrustedStrings its non-secret string
	// values of at least 12 characters (SYNC-NO-LOG-CONFIG).
	Config         map[string]any
	TrustedStrings []string
	// Static holds facts from discovery (near-miss declarations, ...).
	Static StaticFacts
	// LogLevel is the deployment's logging level (Settings.LogLevel): log records below it are judged as
	// warnings by LEAK-LOG and SYNC-NO-LOG-CONFIG, since a deployment at that level never emits them; 0 judges
	// every record.
	LogLevel int
	// EgressAllowed is set when the project let connections to undeclared destinations through
	// (egress = "allow"); otherwise they were refused.
	EgressAllowed bool
	// Wrapper is the check of the project's image wrapper (image-wrapper), nil when none is named;
	// WrapperUnusable says why a named wrapper could not be run at all.
	Wrapper         *wrapper.Result
	WrapperUnusable string
	// Skipped lists scenario names that could not run, with why.
	Skipped map[string]string
}

// StaticFacts are facts discovery found without running the provider.
type StaticFacts struct {
	// NearMissGroups are entry-point groups that look like the provider group but are not it, with where.
	NearMissGroups []discovery.NearMiss
	Pyproject      string
}

var registry []*Check

// register adds checks to the table; IDs must be unique.
func register(cs ...*Check) {
	for _, c := range cs {
		for _, x := range registry {
			if x.ID == c.ID {
				panic("duplicate check " + c.ID)
			}
		}
		registry = append(registry, c)
	}
}

// Checks returns every check, sorted by area order then ID.
func Checks() []*Check {
	out := append([]*Check(nil), registry...)
	order := map[string]int{AreaDiscovery: 0, AreaPlan: 1, AreaSync: 2, AreaSession: 3, AreaTurn: 4, AreaUser: 5, AreaGeneral: 6, AreaLeak: 7}
	sort.SliceStable(out, func(i, j int) bool {
		if order[out[i].Area] != order[out[j].Area] {
			return order[out[i].Area] < order[out[j].Area]
		}
		return out[i].ID < out[j].ID
	})
	return out
}

// Lookup finds a check by ID (case-insensitive).
func Lookup(id string) (*Check, bool) {
	for _, c := range registry {
		if strings.EqualFold(c.ID, id) {
			return c, true
		}
	}
	return nil, false
}

// Suggest returns the check IDs closest to a mistyped one.
func Suggest(id string) []string {
	id = strings.ToUpper(id)
	type cand struct {
		id string
		d  int
	}
	var cs []cand
	for _, c := range registry {
		d := levenshtein(id, c.ID)
		if d <= 3 || strings.Contains(c.ID, id) {
			cs = append(cs, cand{c.ID, d})
		}
	}
	sort.Slice(cs, func(i, j int) bool { return cs[i].d < cs[j].d || (cs[i].d == cs[j].d && cs[i].id < cs[j].id) })
	var out []string
	for i, c := range cs {
		if i == 3 {
			break
		}
		out = append(out, c.id)
	}
	return out
}

func levenshtein(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// Match reports whether a check ID matches a --check/--skip pattern: an exact ID, a glob (SESSION-*), or an
// area name.
func Match(pattern string, c *Check) bool {
	p := strings.ToUpper(strings.TrimSpace(pattern))
	if p == "" {
		return false
	}
	if strings.EqualFold(pattern, c.Area) {
		return true
	}
	ok, err := filepath.Match(p, c.ID)
	return err == nil && ok
}

// ValidatePattern reports a pattern that matches no check, with suggestions.
func ValidatePattern(pattern string) error {
	for _, c := range registry {
		if Match(pattern, c) {
			return nil
		}
	}
	msg := fmt.Sprintf("no check matches %q", pattern)
	if s := Suggest(pattern); len(s) > 0 {
		msg += "; did you mean " + strings.Join(s, ", ") + "?"
	}
	return fmt.Errorf("%s (see `astrabox conformance list`)", msg)
}
