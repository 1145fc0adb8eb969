package conformance

import (
	"fmt"
	"strings"

	"github.com/astrabox-dev/astrabox/internal/report"
	"github.com/astrabox-dev/astrabox/internal/simulate"
)

// This file holds the kit's own rules (Kind KindKitRule): checks no platform clause asks for, that protect
// the author's run itself.

// KitEgressUndeclared is the ID of the kit rule that fails a run whose provider tried to reach a destination
// that is not a declared service.
const KitEgressUndeclared = KitRulePrefix + "EGRESS-UNDECLARED"

func init() {
	register(&Check{
		ID: KitEgressUndeclared, Title: "No connection to an undeclared host (the kit's own rule)", Area: AreaGeneral, Severity: report.SeverityError,
		Kind:  KindKitRule,
		Needs: "a scenario run with egress control", Exercise: exEgress, Judges: judgesAll,
		Rationale: "This is the kit's own rule, not a platform clause. During a run every connection the provider makes goes through the kit's egress proxy; one to a host that is not a declared service ([tool.astrabox.services.NAME]) is refused. A provider that tries shows that, in an author's CI, it would reach a real system (production credentials, records, identity) instead of the fakes: the run fails so that this never passes silently.",
		Hint:      "Declare the host as a service with a fake or stubs (docs/services.md), or stop calling it; egress = \"allow\" lets undeclared destinations through (reported).",
		Wrong:     "urllib.request.urlopen(\"https://api.example.com/v1/token\")  # not a declared service",
		Right:     "urllib.request.urlopen(\"https://api.example.com/v1/token\")  # api.example.com is declared in [tool.astrabox.services.api], served by your fake",
		Decide:    decideKitEgressUndeclared,
	})
}

// exEgress is met when at least one scenario ran under egress control (connections to undeclared
// destinations refused); with egress = "allow" the rule does not apply.
func exEgress(ev *Evidence) Exercise {
	if ev.EgressAllowed {
		return Exercise{NotApplicable: "egress = \"allow\": connections to undeclared destinations were let through, not refused"}
	}
	if len(ev.Histories) == 0 {
		return Exercise{Missing: "no scenario ran, so no connection went through the egress proxy"}
	}
	n := 0
	for _, h := range ev.Histories {
		n += len(h.Egress)
	}
	return Exercise{Met: true, Over: fmt.Sprintf("every connection of %d scenario(s) through the egress proxy: %d to undeclared destinations", len(ev.Histories), n)}
}

// decideKitEgressUndeclared reports each refused connection once per callback, host and scheme, at the line
// of the provider's own code that opened the connection (the callback's def line when the harness could not
// tell, for example a name resolved on an executor thread).
func decideKitEgressUndeclared(ev *Evidence) []Finding {
	out := nativeClientWarnings(ev)
	seen := map[string]bool{}
	for _, h := range ev.Histories {
		for _, a := range h.Egress {
			if !a.Refused {
				continue
			}
			key := a.Callback + "|" + a.Scheme + "|" + a.Host
			if seen[key] {
				continue
			}
			seen[key] = true
			msg := egressMessage(a)
			// The line that opened the connection, as the harness reported it; else the callback's def.
			loc := at(a.File, a.Line)
			if loc == nil && a.Callback != "" {
				loc = ev.methodLocation(simulate.Callback(a.Callback))
			}
			out = append(out, Finding{Message: msg, Location: loc, Evidence: []report.Evidence{bgEvidence(h, a.Replica, msg, loc)}})
		}
	}
	return out
}

// egressMessage says who tried to reach what: "prepare_session tried to reach api.example.com:443 (GET
// https://api.example.com/v1/token), which is not a declared service".
func egressMessage(a simulate.EgressAttempt) string {
	who := a.Callback
	if who == "" {
		who = "work running outside any callback on replica " + a.Replica
	}
	what := a.Host
	if a.Method != "" {
		req := strings.TrimSpace(a.Method + " " + a.Scheme + "://" + a.Host + a.Path)
		what += " (" + req + ")"
	}
	return fmt.Sprintf("%s tried to reach %s, which is not a declared service; the kit refused the connection", who, what)
}
