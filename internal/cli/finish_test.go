package cli

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/astrabox-dev/astrabox/internal/explore"
	"github.com/astrabox-dev/astrabox/internal/report"
	"github.com/astrabox-dev/astrabox/internal/secrets"
	"github.com/astrabox-dev/astrabox/internal/simulate"
)

// TestFinishReportComposesNewValues: the steps after the suite (merge the exploration, apply the inline
// suppressions, mask) each make a new report and leave the one they were given as it was; the mask comes
// last, so a suppression reason quoting the provider's source (here holding a value the provider returned,
// one of the run's secrets) and the warning about an unknown check ID are masked, and the check that only
// exploration failed is failed.
func TestFinishReportComposesNewValues(t *testing.T) {
	const secret = "s3cr3t-material-value-0042"
	set := &secrets.Set{}
	set.Add(secret, "environment value API_KEY returned by prepare_session")
	project := t.TempDir()
	src := "log.info(key)  # astrabox: ignore[LEAK-LOG, " + secret + "] the key is " + secret + "\n"
	if err := os.WriteFile(filepath.Join(project, "p.py"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	suite := &report.Report{Provider: report.Provider{Project: project}, Results: []report.Result{
		{Check: "LEAK-LOG", Status: report.StatusFailed, Message: "logged the key", Location: &report.Location{Path: "p.py", Line: 1}},
		{Check: "GEN-SETTLES", Status: report.StatusPassed, Message: "settled", Evidence: []report.Evidence{{Text: "suite evidence"}}},
	}}
	suite.Summarize()
	before := *suite
	before.Results = append([]report.Result(nil), suite.Results...)
	explored := &explore.Result{Failures: []explore.Failure{{Check: "GEN-SETTLES", Message: "left work running", Index: 3, Seed: 9,
		Shrunk: []string{"prewarm"}, Command: "astrabox simulate run f.yaml", Scenario: &simulate.Scenario{Name: "explored-3"}}}}

	got, warnings, err := finishReport(suite, explored, set)
	if err != nil {
		t.Fatal(err)
	}
	if got == suite {
		t.Fatal("finishReport returned the report it was given")
	}
	if !reflect.DeepEqual(*suite, before) || len(suite.Results[1].Evidence) != 1 || suite.Summary.Failed != 1 {
		t.Errorf("finishReport changed the suite's report:\n%+v", *suite)
	}
	byCheck := map[string]report.Result{}
	for _, r := range got.Results {
		byCheck[r.Check] = r
	}
	if r := byCheck["LEAK-LOG"]; r.Status != report.StatusSkipped || !strings.HasPrefix(r.Message, "suppressed at p.py:1: the key is "+secrets.Marker("raw")) {
		t.Errorf("LEAK-LOG: %s %q", r.Status, r.Message)
	}
	if r := byCheck["GEN-SETTLES"]; r.Status != report.StatusFailed || len(r.Evidence) != 2 {
		t.Errorf("GEN-SETTLES after the merge: %s with %d evidence", r.Status, len(r.Evidence))
	}
	if got.Summary.Failed != 1 || got.Summary.Skipped != 1 {
		t.Errorf("summary %+v", got.Summary)
	}
	if len(warnings) != 1 || !secrets.HasMarker(warnings[0]) {
		t.Errorf("warnings %q", warnings)
	}
	all := strings.Join(warnings, "\n")
	for _, r := range got.Results {
		all += "\n" + r.Message
	}
	if strings.Contains(all, secret) {
		t.Errorf("the finished report or its warnings hold the secret:\n%s", all)
	}
}
