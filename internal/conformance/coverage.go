package conformance

import (
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

// coverageOptions are the harness's coverage options of a run: on unless the run or the settings turn it
// off, with the settings' include and omit globs.
func coverageOptions(s *Settings, o Options) *harness.CoverageOptions {
	on := s.Coverage == nil || *s.Coverage
	if o.Coverage != nil {
		on = *o.Coverage
	}
	if !on {
		return nil
	}
	return &harness.CoverageOptions{Enabled: true, Include: s.CoverageInclude, Omit: s.CoverageOmit}
}

// AddCoverage adds what every call of a history reported to b.
func AddCoverage(b *coverage.Builder, h *simulate.History) {
	for _, c := range h.Calls() {
		b.Add(h.Scenario, c.Replica, c.Coverage)
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
	p := b.Profile()
	for i := range p.Callbacks {
		for j := range p.Callbacks[i].Unreached {
			r := &p.Callbacks[i].Unreached[j]
			r.After = ev.Secrets.Mask(r.After)
		}
	}
	return p
}
