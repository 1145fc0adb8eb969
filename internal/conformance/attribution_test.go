package conformance

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/astrabox-dev/astrabox/internal/report"
	"github.com/astrabox-dev/astrabox/internal/simulate"
)

// judgedProject plays the default suite on a fixture and returns its report with the histories it judged.
func judgedProject(t *testing.T, dir string) (*report.Report, []*simulate.History) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 180*time.Second)
	defer cancel()
	abs, _ := filepath.Abs(dir)
	o := Options{Project: abs, Python: "python3", Jobs: 2, Getenv: pathOnly}
	tg, err := Resolve(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	info, _, err := Inspect(ctx, tg)
	if err != nil || info == nil {
		t.Fatalf("inspect: %v", err)
	}
	ev, err := Collect(ctx, tg, info, 1, o)
	if err != nil {
		t.Fatal(err)
	}
	return Decide(ev, tg, 1, o), ev.Histories
}

// lineOf is the 1-based number of the only line of file that contains text.
func lineOf(t *testing.T, file, text string) int {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for i, l := range strings.Split(string(data), "\n") {
		if strings.Contains(l, text) {
			if found != 0 {
				t.Fatalf("%s: %q is on lines %d and %d", file, text, found, i+1)
			}
			found = i + 1
		}
	}
	if found == 0 {
		t.Fatalf("%s has no line with %q", file, text)
	}
	return found
}

// TestEgressFindingAtConnectLine: the refused usage ping of kit-egress-undeclared (urllib through the
// proxy variables) is recorded with the line of the fixture that opens the connection, not the callback's
// def line, and the finding of KIT-EGRESS-UNDECLARED is placed there.
func TestEgressFindingAtConnectLine(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python")
	}
	dir := "../../testdata/providers/broken/kit-egress-undeclared"
	file, _ := filepath.Abs(filepath.Join(dir, "telemetry_ping.py"))
	want := lineOf(t, file, "urllib.request.urlopen(req")
	rep, hists := judgedProject(t, dir)
	attempts := 0
	for _, h := range hists {
		for _, a := range h.Egress {
			if !a.Refused || a.Host != "telemetry.corp.example:443" {
				continue
			}
			attempts++
			if a.File != file || a.Line != want || a.Function != "_ping" || a.Callback != string(simulate.CallPrepareSession) {
				t.Errorf("%s: attempt %+v, want %s:%d in _ping during prepare_session", h.Scenario, a, file, want)
			}
		}
	}
	if attempts == 0 {
		t.Fatal("no refused attempt to telemetry.corp.example was recorded")
	}
	res := resultOf(t, rep.Results, KitEgressUndeclared)
	if res.Status != report.StatusFailed {
		t.Fatalf("%s did not fail: %+v", KitEgressUndeclared, res)
	}
	// Report locations are relative to the project.
	if res.Location == nil || res.Location.Path != "telemetry_ping.py" || res.Location.Line != want {
		t.Errorf("finding at %+v, want telemetry_ping.py:%d", res.Location, want)
	}
}
