package conformance

import (
	"fmt"

	"github.com/astrabox-dev/astrabox/internal/report"
	"github.com/astrabox-dev/astrabox/internal/secrets"
)

// maskReport returns a copy of rep with every secret of the run's set masked in every string it holds
// (secrets.Masked: every field, however deep, without naming one), leaving rep as it was. A type in the
// report the walker does not know is an error, never an unmasked report.
func maskReport(rep *report.Report, s *secrets.Set) (*report.Report, error) {
	out, err := secrets.Masked(s, rep)
	if err != nil {
		return nil, fmt.Errorf("mask the report: %w", err)
	}
	return out, nil
}

// maskResults is maskReport for a list of results.
func maskResults(results []report.Result, s *secrets.Set) ([]report.Result, error) {
	out, err := secrets.Masked(s, results)
	if err != nil {
		return nil, fmt.Errorf("mask the results: %w", err)
	}
	return out, nil
}
