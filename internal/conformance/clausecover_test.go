package conformance

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/astrabox-dev/astrabox/internal/clauses"
	"github.com/astrabox-dev/astrabox/internal/term"
)

// TestEveryClauseHasACheckOrAReason fails on a clause of spec/clauses.md that no check names and for which no
// reason is recorded (a provider clause missing from uncheckedClauses), and on a stale uncheckedClauses entry.
func TestEveryClauseHasACheckOrAReason(t *testing.T) {
	for _, gap := range clauseGaps(clauses.All(), Checks(), uncheckedClauses) {
		t.Error(gap)
	}
	covs := ClauseCoverages()
	if len(covs) != len(clauses.All()) {
		t.Fatalf("%d coverages for %d clauses", len(covs), len(clauses.All()))
	}
	judged := 0
	for _, cov := range covs {
		if len(cov.Checks) > 0 {
			judged++
			if cov.Reason != "" {
				t.Errorf("%s: checks %v and a reason %q", cov.Clause.ID, cov.Checks, cov.Reason)
			}
		}
	}
	if judged < 30 {
		t.Errorf("only %d clauses have a check: the coverage reads nothing", judged)
	}
}

// withClause returns the embedded spec with row inserted after the row of clause after, parsed.
func withClause(t *testing.T, after, row string) []clauses.Clause {
	t.Helper()
	src := clauses.Source()
	anchor := []byte("| " + after + " |")
	i := bytes.Index(src, anchor)
	if i < 0 {
		t.Fatalf("no row for %s in the spec", after)
	}
	end := i + bytes.IndexByte(src[i:], '\n') + 1
	mod := append(append(append([]byte(nil), src[:end]...), row+"\n"...), src[end:]...)
	spec, err := clauses.Parse("modified.md", mod)
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// gapsAbout keeps the gaps that name one of ids, so that a test of an added clause says nothing about a gap
// the real spec may have (TestEveryClauseHasACheckOrAReason reports those).
func gapsAbout(gaps []string, ids ...string) []string {
	var out []string
	for _, g := range gaps {
		for _, id := range ids {
			if strings.Contains(g, " "+id+" ") || strings.Contains(g, " "+id+",") || strings.Contains(g, "["+id+"]") {
				out = append(out, g)
				break
			}
		}
	}
	return out
}

// TestANewProviderClauseWithoutACheckFails: a provider clause added to the spec text, with no check naming
// it, fails the coverage with one message that names the clause, its line and section, and says what to add.
func TestANewProviderClauseWithoutACheckFails(t *testing.T) {
	spec := withClause(t, "SESSION-CLI-PROBE", "| SESSION-NEW-RULE | provider | Returned files are never empty. |")
	gaps := gapsAbout(clauseGaps(spec, Checks(), uncheckedClauses), "SESSION-NEW-RULE")
	if len(gaps) != 1 {
		t.Fatalf("gaps %q, want exactly the new clause's", gaps)
	}
	var line int
	for _, c := range spec {
		if c.ID == "SESSION-NEW-RULE" {
			line = c.Line
		}
	}
	for _, want := range []string{"provider clause SESSION-NEW-RULE", "line " + strconv.Itoa(line), `"Returned files are never empty."`,
		"add a *Check whose Clauses names SESSION-NEW-RULE", `"Session materials"`, "testdata/providers/broken/", "uncheckedClauses"} {
		if !strings.Contains(gaps[0], want) {
			t.Errorf("message %q does not say %q", gaps[0], want)
		}
	}
	// A recorded reason, or a check naming the clause, closes the gap.
	reasons := map[string]string{"SESSION-NEW-RULE": "cannot be seen from outside"}
	for id, why := range uncheckedClauses {
		reasons[id] = why
	}
	if gaps := gapsAbout(clauseGaps(spec, Checks(), reasons), "SESSION-NEW-RULE"); len(gaps) != 0 {
		t.Errorf("with a reason: %q", gaps)
	}
	withCheck := append(Checks(), &Check{ID: "SESSION-NEW-RULE", Clauses: []string{"SESSION-NEW-RULE"}})
	if gaps := gapsAbout(clauseGaps(spec, withCheck, uncheckedClauses), "SESSION-NEW-RULE"); len(gaps) != 0 {
		t.Errorf("with a check: %q", gaps)
	}
}

// TestANewPlatformClauseNeedsNoCheck: a platform clause added to the spec is covered by the kit playing it (its
// simulator test is internal/simulate's business), and docs name the test that proves it.
func TestANewPlatformClauseNeedsNoCheck(t *testing.T) {
	spec := withClause(t, "TURN-BACKEND", "| TURN-NEW-RULE | platform | The host retries a refused write once. |")
	if gaps := gapsAbout(clauseGaps(spec, Checks(), uncheckedClauses), "TURN-NEW-RULE"); len(gaps) != 0 {
		t.Fatalf("gaps %q", gaps)
	}
	for _, cov := range clauseCoverages(spec, Checks(), uncheckedClauses) {
		if cov.Clause.ID == "TURN-NEW-RULE" && !strings.Contains(cov.Reason, "TestTURN_NEW_RULE in internal/simulate") {
			t.Errorf("reason %q does not name the simulator test", cov.Reason)
		}
	}
}

// TestStaleUncheckedEntriesFail: an uncheckedClauses entry for a clause that does not exist, that a check
// names, that is a platform clause, or that gives no reason is reported.
func TestStaleUncheckedEntriesFail(t *testing.T) {
	spec := withClause(t, "SESSION-CLI-PROBE", "| SESSION-NEW-RULE | provider | Returned files are never empty. |")
	gaps := gapsAbout(clauseGaps(spec, Checks(), map[string]string{
		"NOPE-CLAUSE":      "gone",
		"PLAN-SYNC":        "judged after all",
		"SYNC-CAS":         "the platform's",
		"SESSION-NEW-RULE": "",
	}), "NOPE-CLAUSE", "PLAN-SYNC", "SYNC-CAS", "SESSION-NEW-RULE")
	want := []string{
		"uncheckedClauses names NOPE-CLAUSE, which spec/clauses.md does not have",
		"uncheckedClauses names PLAN-SYNC, which checks [PLAN-SYNC] judge",
		"uncheckedClauses[SESSION-NEW-RULE] records no reason",
		"uncheckedClauses names SYNC-CAS, a platform clause",
	}
	// The empty reason also leaves SESSION-NEW-RULE without a check or reason: one message for that first.
	if len(gaps) != len(want)+1 || !strings.Contains(gaps[0], "provider clause SESSION-NEW-RULE") {
		t.Fatalf("gaps %q", gaps)
	}
	for i, w := range want {
		if !strings.HasPrefix(gaps[i+1], w) {
			t.Errorf("gap %d: %q, want %q", i+1, gaps[i+1], w)
		}
	}
}

// TestExplainShowsEveryClauseText: `conformance explain` shows, for every check, the spec's text of every
// clause it names (whitespace aside: explain wraps it), and docs/checks.md does too.
func TestExplainShowsEveryClauseText(t *testing.T) {
	doc := ChecksMarkdown()
	for _, c := range Checks() {
		out := strings.Join(strings.Fields(ExplainWidth(c, term.NewStyles(false), 60)), " ")
		for _, id := range c.Clauses {
			cl, ok := clauses.Lookup(id)
			if !ok {
				t.Errorf("%s names %s, not a clause", c.ID, id)
				continue
			}
			if want := id + ": " + strings.Join(strings.Fields(cl.Plain()), " "); !strings.Contains(out, want) {
				t.Errorf("explain %s lacks %q", c.ID, want)
			}
			if want := "- `" + id + "` (" + string(cl.Owner) + "): " + cl.Text + "\n"; !strings.Contains(doc, want) {
				t.Errorf("docs/checks.md lacks %q under %s", want, c.ID)
			}
		}
	}
	for _, cov := range ClauseCoverages() {
		if len(cov.Checks) == 0 && !strings.Contains(doc, "| "+cov.Clause.ID+" | "+string(cov.Clause.Owner)+" | ") {
			t.Errorf("docs/checks.md does not list %s among the clauses no check judges", cov.Clause.ID)
		}
	}
}

// clauseGaps says, one message per problem, what the check table and uncheckedClauses lack or hold in excess
// against a spec: a provider clause with neither a check nor a recorded reason, and an entry of unchecked
// that is stale (no such clause, a platform clause, a clause a check names, or no reason given).
func clauseGaps(spec []clauses.Clause, checks []*Check, unchecked map[string]string) []string {
	var gaps []string
	byID := map[string]ClauseCoverage{}
	for _, cov := range clauseCoverages(spec, checks, unchecked) {
		byID[cov.Clause.ID] = cov
		if len(cov.Checks) == 0 && cov.Reason == "" {
			cl := cov.Clause
			gaps = append(gaps, fmt.Sprintf("%s clause %s (%s line %d, section %q: %q) has no check: add a *Check "+
				"whose Clauses names %s to the checks_<area>.go file of internal/conformance, with a broken fixture "+
				"under testdata/providers/broken/<check-id>/; or, if the kit cannot judge it from outside, record why "+
				"in uncheckedClauses (internal/conformance/clausecover.go)",
				cl.Owner, cl.ID, clauses.SourceName, cl.Line, cl.Section, cl.Text, cl.ID))
		}
	}
	ids := make([]string, 0, len(unchecked))
	for id := range unchecked {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		cov, ok := byID[id]
		switch {
		case !ok:
			gaps = append(gaps, fmt.Sprintf("uncheckedClauses names %s, which spec/clauses.md does not have; drop the entry", id))
		case unchecked[id] == "":
			gaps = append(gaps, fmt.Sprintf("uncheckedClauses[%s] records no reason; say why no check judges it", id))
		case cov.Clause.Owner == clauses.OwnerPlatform:
			gaps = append(gaps, fmt.Sprintf("uncheckedClauses names %s, a platform clause, which needs no entry (the kit plays it); drop the entry", id))
		case len(cov.Checks) > 0:
			gaps = append(gaps, fmt.Sprintf("uncheckedClauses names %s, which checks %v judge; drop the entry", id, cov.Checks))
		}
	}
	return gaps
}
