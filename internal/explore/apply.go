package explore

import (
	"fmt"

	"github.com/astrabox-dev/astrabox/internal/coverage"
	"github.com/astrabox-dev/astrabox/internal/report"
)

// Merge returns a new report: rep with an exploration's failures folded in. A check that the default suite
// passed but an explored scenario failed becomes failed (or flaky, when its replay did not fail the same
// way), with the shrunk steps and the replay command as evidence. What a guided exploration reached of the
// provider joins the report's coverage. rep is left as it was.
func Merge(in *report.Report, res *Result) *report.Report {
	rep := *in
	rep.Results = make([]report.Result, len(in.Results))
	for i, r := range in.Results {
		r.Evidence = append([]report.Evidence(nil), r.Evidence...)
		rep.Results[i] = r
	}
	if res == nil {
		return &rep
	}
	for _, f := range res.Failures {
		for i := range rep.Results {
			r := &rep.Results[i]
			if r.Check != f.Check {
				continue
			}
			text := fmt.Sprintf("explored scenario %d (seed %d) failed: %s; shrunk from %d to %d steps; replay: %s", f.Index, f.Seed, f.Message, f.Steps, len(f.Shrunk), f.Command)
			status := report.StatusFailed
			if f.Flaky {
				status = report.StatusFlaky
				text = fmt.Sprintf("explored scenario %d (seed %d) is flaky for this check: %s; replay: %s", f.Index, f.Seed, f.Differed, f.Command)
			}
			switch r.Status {
			case report.StatusPassed, report.StatusWarning, report.StatusSkipped:
				r.Status = status
				r.Message = "found by exploration: " + f.Message
				if f.Flaky {
					r.Message = "flaky under exploration: " + f.Differed
				}
			case report.StatusFlaky:
				if !f.Flaky {
					r.Status = report.StatusFailed
				}
			}
			r.Evidence = append(r.Evidence, report.Evidence{Text: text, Scenario: f.Scenario.Name, Steps: f.Shrunk})
		}
	}
	if res.Coverage != nil && rep.Coverage != nil && rep.Coverage.Mode != coverage.ModeOff {
		rep.Coverage = coverage.Merge(rep.Coverage, res.Coverage)
	} else if res.Coverage != nil && rep.Coverage == nil {
		rep.Coverage = res.Coverage
	}
	rep.Summarize()
	return &rep
}
