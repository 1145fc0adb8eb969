package conformance

import (
	"slices"
	"strings"

	"github.com/astrabox-dev/astrabox/internal/clauses"
)

// uncheckedClauses lists the provider clauses of spec/clauses.md that no check judges, each with the reason
// recorded for it. A platform clause needs no entry: the kit plays it (see ClauseCoverage.Reason). Empty
// today: every provider clause has a check.
var uncheckedClauses = map[string]string{}

// ClauseCoverage is how the kit covers one clause of the contract: the checks that judge it, or why none does.
type ClauseCoverage struct {
	Clause clauses.Clause
	// Checks are the IDs of the checks that name the clause, in the check table's order.
	Checks []string
	// Reason says why no check judges the clause; empty when Checks is not.
	Reason string
}

// PlatformTest is the test of internal/simulate that proves the simulator keeps a platform clause:
// TestSYNC_CAS for SYNC-CAS (internal/simulate's TestEveryPlatformClauseHasATest requires it).
func PlatformTest(id string) string { return "Test" + strings.ReplaceAll(id, "-", "_") }

// platformReason is the recorded reason for a platform clause that no check judges.
func platformReason(id string) string {
	return "a platform clause: the kit plays it rather than judging the provider; the simulator behaves so, and " +
		PlatformTest(id) + " in internal/simulate proves it"
}

// ClauseCoverages is the coverage of every clause of the embedded spec, in the spec's order.
func ClauseCoverages() []ClauseCoverage {
	return clauseCoverages(clauses.All(), Checks(), uncheckedClauses)
}

// clauseCoverages joins the clauses of a spec with the checks that name them and the recorded reasons.
func clauseCoverages(spec []clauses.Clause, checks []*Check, unchecked map[string]string) []ClauseCoverage {
	var out []ClauseCoverage
	for _, cl := range spec {
		cov := ClauseCoverage{Clause: cl}
		for _, c := range checks {
			if slices.Contains(c.Clauses, cl.ID) {
				cov.Checks = append(cov.Checks, c.ID)
			}
		}
		if len(cov.Checks) == 0 {
			switch {
			case cl.Owner == clauses.OwnerPlatform:
				cov.Reason = platformReason(cl.ID)
			default:
				cov.Reason = unchecked[cl.ID]
			}
		}
		out = append(out, cov)
	}
	return out
}
