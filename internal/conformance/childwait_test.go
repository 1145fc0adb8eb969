package conformance

import (
	"strings"
	"testing"
	"time"

	"github.com/astrabox-dev/astrabox/internal/harness"
	"github.com/astrabox-dev/astrabox/internal/simulate"
)

// TestChildWaitsAreReported: the settles that waited for children a callback left running are told per
// callback, with the command lines, the count and the time they cost, never silently.
func TestChildWaitsAreReported(t *testing.T) {
	idle := []harness.LeftoverChild{{PID: 10, Cmdline: "sleep 300", Idle: true}}
	hists := []*simulate.History{
		{ChildWaits: []simulate.ChildWait{{Replica: "r1", Calls: []string{"r1#2"}, Methods: []string{"prepare_session"}, Children: idle, Waited: 600 * time.Millisecond}}},
		nil,
		{ChildWaits: []simulate.ChildWait{{Replica: "r2", Calls: []string{"r2#1"}, Methods: []string{"prepare_session"}, Children: idle, Waited: 550 * time.Millisecond}}},
	}
	ws := childWaitWarnings(hists)
	if len(ws) != 1 {
		t.Fatalf("warnings = %q", ws)
	}
	for _, want := range []string{"prepare_session left child process(es) running", "`sleep 300`", "in 2 settle(s)", "1.15s in all", "each was idle"} {
		if !strings.Contains(ws[0], want) {
			t.Errorf("%q lacks %q", ws[0], want)
		}
	}
	if childWaitWarnings([]*simulate.History{{}}) != nil {
		t.Error("a warning without any child wait")
	}
}
