package suppress

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/astrabox-dev/astrabox/internal/report"
)

func TestApply(t *testing.T) {
	project := t.TempDir()
	src := strings.Join([]string{
		"import logging",
		`log.info("token %s", tok)  # astrabox: ignore[LEAK-LOG] a fixture token, never a real one`,
		`log.info("cfg %s", cfg)  # astrabox: ignore[SYNC-NO-LOG-CONFIG]`,
		`raise ValueError(tok)  # astrabox: ignore[LEAK-EROR, LEAK-ERROR] reviewed`,
		`x = 1`,
	}, "\n") + "\n"
	if err := os.WriteFile(filepath.Join(project, "p.py"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "lib.py")
	if err := os.WriteFile(outside, []byte("# astrabox: ignore[PLAN-SYNC] not mine to say\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	at := func(p string, line int) *report.Location { return &report.Location{Path: p, Line: line} }
	rep := &report.Report{Provider: report.Provider{Project: project}, Results: []report.Result{
		{Check: "LEAK-LOG", Status: report.StatusFailed, Message: "logged a token", Location: at("p.py", 2)},
		{Check: "SYNC-NO-LOG-CONFIG", Status: report.StatusWarning, Message: "logged config", Location: at("p.py", 3)},
		{Check: "LEAK-ERROR", Status: report.StatusFlaky, Message: "token in error", Evidence: []report.Evidence{{Location: at(filepath.Join(project, "p.py"), 4)}}},
		{Check: "LEAK-PLAN", Status: report.StatusFailed, Message: "token in plan", Location: at("p.py", 2)},
		{Check: "PLAN-SYNC", Status: report.StatusFailed, Message: "async plan", Location: at(outside, 1)},
		{Check: "GEN-SETTLES", Status: report.StatusPassed, Location: at("p.py", 2)},
	}}
	known := func(id string) bool { return id != "LEAK-EROR" }
	before := rep.Results[0]
	in := rep
	rep, warnings := Apply(in, known)
	if in.Results[0].Status != before.Status || in.Results[0].Message != before.Message || in.Summary != (report.Summary{}) {
		t.Errorf("Apply changed the report it was given: %+v", in.Results[0])
	}
	want := map[string]report.Status{
		"LEAK-LOG": report.StatusSkipped, "SYNC-NO-LOG-CONFIG": report.StatusWarning, "LEAK-ERROR": report.StatusSkipped,
		"LEAK-PLAN": report.StatusFailed, "PLAN-SYNC": report.StatusFailed, "GEN-SETTLES": report.StatusPassed,
	}
	for _, r := range rep.Results {
		if r.Status != want[r.Check] {
			t.Errorf("%s: status %s, want %s", r.Check, r.Status, want[r.Check])
		}
	}
	if m := rep.Results[0].Message; m != "suppressed at p.py:2: a fixture token, never a real one (the finding was: logged a token)" {
		t.Errorf("message %q", m)
	}
	if rep.Summary.Skipped != 2 || rep.Summary.Failed != 2 || rep.HasFailures() != true {
		t.Errorf("summary %+v", rep.Summary)
	}
	all := strings.Join(warnings, "\n")
	for _, w := range []string{"p.py:3: astrabox: ignore[SYNC-NO-LOG-CONFIG] gives no reason", "p.py:4: astrabox: ignore[LEAK-EROR] names no check"} {
		if !strings.Contains(all, w) {
			t.Errorf("warnings lack %q:\n%s", w, all)
		}
	}
}
