package conformance

import (
	"strings"
	"testing"

	"github.com/astrabox-dev/astrabox/internal/harness"
	"github.com/astrabox-dev/astrabox/internal/simulate"
)

// TestAHungProviderWaitsOutOneDeadline: once a callback has hung (blocked its event loop and been killed),
// the run's other scenarios stop at their next step instead of each waiting out a deadline and grace again
// (a run of the default suite on broken/gen-settles took 65s that way; at most 30s is wanted). So the whole
// suite sees exactly one hung call, and every scenario stopped early says why.
func TestAHungProviderWaitsOutOneDeadline(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python")
	}
	// Most of it is the hung call's deadline and grace, waited out: it runs beside the other parallel tests
	// (after every sequential one, so never beside a test that counts processes or sets the environment).
	t.Parallel()
	c := collectSuite(t, "../../testdata/providers/broken/gen-settles")
	hung, stopped := 0, 0
	for _, h := range c.ev.Histories {
		for _, e := range h.Events {
			if e.Call != nil && e.Call.Outcome == simulate.OutcomeDied && e.Call.ProcessKind == string(harness.KindHung) {
				hung++
			}
		}
		if strings.HasPrefix(h.Aborted, simulate.StoppedByHang) {
			stopped++
			if !strings.Contains(h.Aborted, "prepare_session in scenario") {
				t.Errorf("scenario %s stopped without naming the hang: %q", h.Scenario, h.Aborted)
			}
		}
	}
	// The scenarios playing beside the first hang, one per other slot, may each hang once too before their
	// step ends; those hangs run at the same time as the first, so the run still waits out about one. A
	// scenario that began after the first hang must not hang at all.
	slots := c.opts.suiteJobs(len(c.ev.Histories), len(c.target.Settings.Services))
	if hung < 1 || hung > slots {
		t.Errorf("%d hung calls over the suite, want 1 (at most %d, one per slot playing beside it): every hang after the first costs a full deadline and grace", hung, slots)
	}
	if stopped == 0 {
		t.Errorf("no scenario stopped early after the hang")
	}
	if w := stoppedByHang(c.ev.Histories); !strings.Contains(w, "the run stopped early") {
		t.Errorf("no warning for the stopped scenarios: %q", w)
	}
}
