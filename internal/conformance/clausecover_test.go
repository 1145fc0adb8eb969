package conformance

import (
	"bytes"
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

// TestANewProviderClauseWithoutACheckFails: a provider clause added to the spec text, with no check naming
// it, fails the coverage with one message that names the clause, its line and section, and says what to add.
func TestANewProviderClauseWithoutACheckFails(t *testing.T) {
	spec := withClause(t, "SESSION-CLI-PROBE", "| SESSION-NEW-RULE | provider | Returned files are never empty. |")
	gaps := clauseGaps(spec, Checks(), uncheckedClauses)
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
	if gaps := clauseGaps(spec, Checks(), map[string]string{"SESSION-NEW-RULE": "cannot be seen from outside"}); len(gaps) != 0 {
		t.Errorf("with a reason: %q", gaps)
	}
	withCheck := append(Checks(), &Check{ID: "SESSION-NEW-RULE", Clauses: []string{"SESSION-NEW-RULE"}})
	if gaps := clauseGaps(spec, withCheck, uncheckedClauses); len(gaps) != 0 {
		t.Errorf("with a check: %q", gaps)
	}
}

// TestANewPlatformClauseNeedsNoCheck: a platform clause added to the spec is covered by the kit playing it (its
// simulator test is internal/simulate's business), and docs name the test that proves it.
func TestANewPlatformClauseNeedsNoCheck(t *testing.T) {
	spec := withClause(t, "TURN-BACKEND", "| TURN-NEW-RULE | platform | The host retries a refused write once. |")
	if gaps := clauseGaps(spec, Checks(), uncheckedClauses); len(gaps) != 0 {
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
	gaps := clauseGaps(spec, Checks(), map[string]string{
		"NOPE-CLAUSE":      "gone",
		"PLAN-SYNC":        "judged after all",
		"SYNC-CAS":         "the platform's",
		"SESSION-NEW-RULE": "",
	})
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
