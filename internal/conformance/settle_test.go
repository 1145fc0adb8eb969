package conformance

import (
	"strings"
	"testing"
)

// TestLateWorkIsJudgedAgainstItsCall proves the late-work fixtures do what they claim and that the kit sees
// it where it happened: the pool's audit write is in the recorded requests, attributed to the prepare_turn
// that submitted it as background work; the timer's print carries the workload token, in a background event
// of the prepare_session that started it.
func TestLateWorkIsJudgedAgainstItsCall(t *testing.T) {
	t.Run("late-pool", func(t *testing.T) {
		recordedThenLive(t, "broken/gen-no-dispatch-late-pool", false, func(t *testing.T, j judged) { lateAuditsBlameTheirTurn(t, j.ev) })
	})
	t.Run("late-timer", func(t *testing.T) {
		recordedThenLive(t, "broken/leak-log-late-timer", true, func(t *testing.T, j judged) { lateTimerBlamesItsSession(t, j.ev) })
	})
}

// lateAuditsBlameTheirTurn: every audit write of gen-no-dispatch-late-pool is attributed to its prepare_turn,
// as background work, and applied.
func lateAuditsBlameTheirTurn(t *testing.T, ev *Evidence) {
	audits := 0
	for _, h := range ev.Histories {
		methods := map[string]string{}
		for _, c := range h.Calls() {
			methods[c.Key] = string(c.Method)
		}
		for _, r := range h.Requests {
			if !strings.HasPrefix(r.Path, "/v1/records/audit/") {
				continue
			}
			audits++
			if methods[r.Call] != "prepare_turn" || !r.Background || !r.Applied {
				t.Errorf("%s: audit write %s attributed to %q (%s), background %v, applied %v", h.Scenario, r.Path, r.Call, methods[r.Call], r.Background, r.Applied)
			}
		}
	}
	if audits == 0 {
		t.Fatal("no audit write recorded: the fixture does not do what it claims, or the kit did not wait for it")
	}
}

// lateTimerBlamesItsSession: the output of leak-log-late-timer's timer, which holds a planted secret, is
// attributed to the prepare_session that started it.
func lateTimerBlamesItsSession(t *testing.T, ev *Evidence) {
	leaked := 0
	for _, h := range ev.Histories {
		methods := map[string]string{}
		for _, c := range h.Calls() {
			methods[c.Key] = string(c.Method)
		}
		for _, e := range h.Events {
			if e.Origin != "" && strings.Contains(e.Stdout, "debug: session token") {
				leaked++
				if methods[e.Origin] != "prepare_session" {
					t.Errorf("the timer's output is attributed to %s (%s)", e.Origin, methods[e.Origin])
				}
				if len(ev.Secrets.FindString(e.Stdout)) == 0 {
					t.Errorf("the timer's output holds no planted secret: %q", e.Stdout)
				}
			}
		}
	}
	if leaked == 0 {
		t.Fatal("the timer's output was not collected")
	}
}
