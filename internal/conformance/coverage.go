package conformance

import (
	"fmt"

	"github.com/astrabox-dev/astrabox/internal/coverage"
	"github.com/astrabox-dev/astrabox/internal/harness"
	"github.com/astrabox-dev/astrabox/internal/report"
	"github.com/astrabox-dev/astrabox/internal/simulate"
)

// areaCallbacks are the callbacks the checks of each area judge (the other areas judge every callback, or
// loading, and name none).
var areaCallbacks = map[string][]string{
	AreaPlan:    {"plan"},
	AreaSync:    {"synchronize", "recover"},
	AreaSession: {"prepare_session"},
	AreaTurn:    {"prepare_turn"},
	AreaUser:    {"read_user_actions", "perform_user_action"},
}

// cheapCoverage tells whether coverage is cheap on a Python version, and so on by default: sys.monitoring
// (3.12+) costs a few percent of the suite's time, a trace function (3.9-3.11) a third (docs/performance.md).
func cheapCoverage(version [3]int) bool {
	return version[0] > 3 || (version[0] == 3 && version[1] >= 12)
}

// coverageOptions are the harness's coverage options of a run, with the settings' include and omit globs:
// the run's choice (--coverage), else the settings' (coverage = ...), else on where it is cheap.
func coverageOptions(s *Settings, o Options, version [3]int) *harness.CoverageOptions {
	on := cheapCoverage(version)
	if s.Coverage != nil {
		on = *s.Coverage
	}
	if o.Coverage != nil {
		on = *o.Coverage
	}
	if !on {
		return nil
	}
	return &harness.CoverageOptions{Enabled: true, Include: s.CoverageInclude, Omit: s.CoverageOmit}
}

// coverageOff is the profile of a run that left coverage off by default (not by choice): it says why, and
// how to turn it on. Nil when coverage was chosen off or was on.
func coverageOff(s *Settings, o Options, version [3]int) *coverage.Profile {
	if s.Coverage != nil || o.Coverage != nil || cheapCoverage(version) {
		return nil
	}
	return &coverage.Profile{Mode: coverage.ModeOff, Files: []coverage.File{}, Callbacks: []coverage.Callback{}, Notes: []string{fmt.Sprintf(
		"not measured: on Python %d.%d coverage needs a trace function, which makes the suite about a third slower; --coverage (or coverage = true in [tool.astrabox]) turns it on, and Python 3.12+ measures it at little cost",
		version[0], version[1])}}
}

// AddCoverage adds what every call of a history reported to b.
func AddCoverage(b *coverage.Builder, h *simulate.History) {
	for _, c := range h.Calls() {
		b.Add(h.Scenario, c.Replica, c.Coverage)
	}
	for _, c := range h.Coverage {
		b.Add(h.Scenario, c.Replica, c.Report)
	}
}

// coverageProfile is the coverage of the evidence's histories, with where each implemented callback is and
// which callbacks each reported check judges; nil when no call reported coverage.
func coverageProfile(ev *Evidence, results []report.Result) *coverage.Profile {
	b := coverage.NewBuilder()
	any := false
	for _, h := range ev.Histories {
		for _, c := range h.Calls() {
			if c.Coverage != nil {
				any = true
			}
		}
		any = any || len(h.Coverage) > 0
		AddCoverage(b, h)
	}
	if !any {
		return nil
	}
	if ev.Load != nil {
		for name, m := range ev.Load.Methods {
			if m.Overridden && m.File != "" {
				b.Implement(name, m.File, m.Line)
			}
		}
	}
	checks := map[string][]string{}
	for _, r := range results {
		if cbs := areaCallbacks[r.Area]; cbs != nil {
			checks[r.Check] = cbs
		}
	}
	b.SetChecks(checks)
	return b.Profile() // masked with the rest of the report (maskReport)
}
