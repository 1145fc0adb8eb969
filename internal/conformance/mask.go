package conformance

import (
	"github.com/astrabox-dev/astrabox/internal/report"
	"github.com/astrabox-dev/astrabox/internal/secrets"
)

// maskResult masks every secret in every text of a result a provider can put there: the message, what the
// result was decided over, and each evidence's text, steps, names and location (a log record's pathname or a
// warning's filename is the provider's to set, so a location path can hold a secret too). Locations are
// copied, never changed in place: results and evidence share them.
func maskResult(r report.Result, s *secrets.Set) report.Result {
	r.Message = s.Mask(r.Message)
	r.DecidedOver = s.Mask(r.DecidedOver)
	r.Location = maskLocation(r.Location, s)
	ev := make([]report.Evidence, len(r.Evidence))
	for i, e := range r.Evidence {
		e.Text = s.Mask(e.Text)
		e.Scenario = s.Mask(e.Scenario)
		e.Replica = s.Mask(e.Replica)
		e.Callback = s.Mask(e.Callback)
		if e.Steps != nil {
			steps := make([]string, len(e.Steps))
			for j, st := range e.Steps {
				steps[j] = s.Mask(st)
			}
			e.Steps = steps
		}
		e.Location = maskLocation(e.Location, s)
		ev[i] = e
	}
	if r.Evidence != nil {
		r.Evidence = ev
	}
	return r
}

func maskLocation(l *report.Location, s *secrets.Set) *report.Location {
	if l == nil {
		return nil
	}
	out := *l
	out.Path = s.Mask(out.Path)
	return &out
}
