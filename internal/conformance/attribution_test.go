package conformance

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/astrabox-dev/astrabox/internal/report"
	"github.com/astrabox-dev/astrabox/internal/simulate"
)

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
// def line, and the finding of KIT-EGRESS-UNDECLARED is placed there. `make test` reads the fixture's
// recorded run; the long lane also plays it live (recordedThenLive).
func TestEgressFindingAtConnectLine(t *testing.T) {
	dir := "../../testdata/providers/broken/kit-egress-undeclared"
	want := lineOf(t, filepath.Join(dir, "telemetry_ping.py"), "urllib.request.urlopen(req")
	recordedThenLive(t, "broken/kit-egress-undeclared", false, func(t *testing.T, j judged) {
		file := j.path("testdata/providers/broken/kit-egress-undeclared/telemetry_ping.py")
		attempts := 0
		for _, h := range j.hists {
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
		res := resultOf(t, j.results, KitEgressUndeclared)
		if res.Status != report.StatusFailed {
			t.Fatalf("%s did not fail: %+v", KitEgressUndeclared, res)
		}
		// Report locations are relative to the project.
		if res.Location == nil || res.Location.Path != "telemetry_ping.py" || res.Location.Line != want {
			t.Errorf("finding at %+v, want telemetry_ping.py:%d", res.Location, want)
		}
	})
}

// auditWrites are the fixture's audit PUTs (over raw sockets) with the prepare_turn each is attributed to.
func auditWrites(t *testing.T, hists []*simulate.History) (n int, each func(fn func(h *simulate.History, rq simulate.Request, c *simulate.CallRecord))) {
	t.Helper()
	each = func(fn func(h *simulate.History, rq simulate.Request, c *simulate.CallRecord)) {
		for _, h := range hists {
			byKey := map[string]*simulate.CallRecord{}
			for _, c := range h.Calls() {
				byKey[c.Key] = c
			}
			for _, rq := range h.Requests {
				if rq.Method == "PUT" && strings.HasPrefix(rq.Path, "/v1/records/streamline-audit/") {
					fn(h, rq, byKey[rq.Call])
				}
			}
		}
	}
	each(func(*simulate.History, simulate.Request, *simulate.CallRecord) { n++ })
	return n, each
}

// madeBy reports whether c is the prepare_turn on rq's replica for the session and attempt rq's path names.
func madeBy(rq simulate.Request, c *simulate.CallRecord) bool {
	return c != nil && c.Is(simulate.CallPrepareTurn) && c.Replica == rq.Replica &&
		rq.Path == "/v1/records/streamline-audit/"+c.Ctx.Session+"/"+c.Ctx.Attempt
}

// TestLateRawSocketWriteBlamesItsStarter: the batched audit PUT of broken/gen-no-dispatch-late-socket,
// written over a raw socket (no call header) while the replica's next prepare_turn is in flight, is in the
// recorded requests attributed to the prepare_turn whose thread opened the connection, with the call in
// flight kept apart; GEN-NO-DISPATCH fails naming that prepare_turn. It reads the fixture's recorded run and
// plays it live, in `make test` too: the live sample of a background write's attribution.
func TestLateRawSocketWriteBlamesItsStarter(t *testing.T) {
	recordedThenLive(t, "broken/gen-no-dispatch-late-socket", true, func(t *testing.T, j judged) {
		n, each := auditWrites(t, j.hists)
		if n == 0 {
			t.Fatal("no audit PUT over the raw socket was recorded")
		}
		each(func(h *simulate.History, rq simulate.Request, c *simulate.CallRecord) {
			if !madeBy(rq, c) {
				t.Errorf("%s: %s %s attributed to %q (%+v), not to the prepare_turn of its attempt", h.Scenario, rq.Method, rq.Path, rq.Call, c)
			}
			if !rq.Background || rq.InFlight == "" || rq.InFlight == rq.Call {
				t.Errorf("%s: %s %s (call %s) should have landed while another call was in flight: in_flight %q, background %v",
					h.Scenario, rq.Method, rq.Path, rq.Call, rq.InFlight, rq.Background)
			}
			if c != nil && c.Observations.Leftovers.Empty() {
				t.Errorf("%s: %s left no thread, yet its write came later", h.Scenario, c.Key)
			}
		})
		res := resultOf(t, j.results, "GEN-NO-DISPATCH")
		if res.Status != report.StatusFailed || !strings.Contains(res.Message, "prepare_turn returned, but 1 of its write(s) landed afterwards") {
			t.Errorf("GEN-NO-DISPATCH: %s %s", res.Status, res.Message)
		}
		for _, id := range []string{"TURN-IDEMPOTENT", "GEN-CANCEL-CLEAN"} {
			if r := resultOf(t, j.results, id); r.Status == report.StatusFailed {
				t.Errorf("%s failed: the late write was blamed on the call in flight: %s", id, r.Message)
			}
		}
	})
}

// TestRawSocketWriteInItsTurn: correct/socket_audit_waits writes its audit records over raw sockets from a
// worker thread the turn awaits; every one is attributed to the prepare_turn of its attempt, in its flight.
// `make test` reads the fixture's recorded run; the long lane also plays it live.
func TestRawSocketWriteInItsTurn(t *testing.T) {
	recordedThenLive(t, "correct/socket_audit_waits", false, func(t *testing.T, j judged) {
		n, each := auditWrites(t, j.hists)
		if n == 0 {
			t.Fatal("no audit PUT over the raw socket was recorded")
		}
		each(func(h *simulate.History, rq simulate.Request, c *simulate.CallRecord) {
			if !madeBy(rq, c) || rq.Background || rq.InFlight != "" {
				t.Errorf("%s: %s %s attributed to %q (in flight %q, background %v), want the prepare_turn of its attempt", h.Scenario, rq.Method, rq.Path, rq.Call, rq.InFlight, rq.Background)
			}
		})
		for _, r := range j.results {
			if r.Status == report.StatusFailed {
				t.Errorf("%s failed: %s", r.Check, r.Message)
			}
		}
	})
}
