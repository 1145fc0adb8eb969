package simulate

import (
	"bytes"
	"strings"
	"testing"
)

const fillsYAML = `name: fills
seed: 11
replicas: 2
principals:
  needs-action: {consent: granted}
agents:
  - {id: agent-1, creator: alice}
  - {id: agent-2, creator: carol}
steps:
  - {op: prewarm, agent: agent-1, replica: r1}
  - op: prewarm
    agent: agent-2
    replica: r2
    fault: {kind: host_loss}
    double: [{kind: hold, write: $each}]
  - {op: recover, operation: $unresolved, replica: r1}
  - {op: release}
  - {op: cold_start, session: s1, agent: agent-1, principal: needs-action, replica: r1}
  - {op: perform_user_action, session: s1, action: $offered, replica: r1}
  - {op: read_user_actions, session: s1, replica: r2}
  - {op: perform_user_action, session: s1, action: $offered, replica: r1}
  - {op: perform_user_action, session: s1, action: $offered, replica: r2}
  - {op: turn, session: s1, attempt: valid-1, replica: r1, live_for: $validity}
  - {op: retry, session: s1, attempt: valid-1, replica: r2}
`

// TestFillsExpandAndReplay plays a scenario with every fill, checks what each was filled with, and replays the
// recorded (played) scenario from scratch: the history must be the same, byte for byte.
func TestFillsExpandAndReplay(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python")
	}
	h := play(t, "probe", fillsYAML)
	dumpOnFailure(t, h)
	played := h.Played
	if played == nil {
		t.Fatal("the history records no played scenario")
	}
	var summary []string
	for _, st := range played.Steps {
		if st.hasFill() {
			t.Errorf("step %s still holds a fill in the played scenario: %+v", st.Op, st)
		}
		summary = append(summary, st.String())
	}
	got := strings.Join(summary, "\n")
	for _, want := range []string{
		// $unresolved: the one operation lost with its host (op-2), nothing else.
		"recover operation=op-2 replica=r1",
		// $offered before any state was read: no step; after the read, the provider's own id, on both replicas.
		"perform_user_action session=s1 action=check replica=r1\nperform_user_action session=s1 action=check replica=r2",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("played steps lack %q:\n%s", want, got)
		}
	}
	if n := strings.Count(got, "perform_user_action"); n != 2 {
		t.Errorf("%d perform_user_action steps played, want 2 (none before a state was read):\n%s", n, got)
	}
	if st := played.Steps[1]; st.Double[0].Write != (Position{N: 1}) {
		t.Errorf("$each filled the hold with %+v; agent-1's synchronize made one write", st.Double[0].Write)
	}
	var turn Step
	for _, st := range played.Steps {
		if st.Op == OpTurn {
			turn = st
		}
	}
	if turn.LiveFor != (LiveFor{Seconds: ValidityFactor * 300}) {
		t.Errorf("live_for filled with %+v, want %g s (2.5 x the 300 s validity)", turn.LiveFor, ValidityFactor*300)
	}
	refreshes := 0
	for _, c := range h.CallsOf("prepare_turn") {
		if c.Ctx.Refresh {
			refreshes++
		}
	}
	if refreshes < 2 {
		t.Errorf("%d refreshes for a write live 2.5 validity periods, want 2", refreshes)
	}
	if len(h.CallsOf("perform_user_action")) != 2 {
		t.Errorf("perform_user_action reached the provider %d times, want 2", len(h.CallsOf("perform_user_action")))
	}

	// Replay the recorded scenario.
	text, err := played.YAML()
	if err != nil {
		t.Fatal(err)
	}
	again, err := ParseScenario("played.yaml", text)
	if err != nil {
		t.Fatalf("the played scenario does not parse: %v\n%s", err, text)
	}
	h2, err := runParsed(again, "probe")
	if err != nil {
		t.Fatal(err)
	}
	first, second := mustJSON(t, h), mustJSON(t, h2)
	if !bytes.Equal(first, second) {
		at := 0
		for at < len(first) && at < len(second) && first[at] == second[at] {
			at++
		}
		lo := max(0, at-300)
		t.Logf("played:\n%s", text)
		t.Fatalf("the replay differs at byte %d:\nfirst  ...%s\nreplay ...%s", at, first[lo:min(len(first), at+200)], second[lo:min(len(second), at+200)])
	}
}

// TestFillErrors: a fill in a field that does not take it is refused with the line.
func TestFillErrors(t *testing.T) {
	for _, tc := range []struct{ step, want string }{
		{"{op: perform_user_action, session: s1, action: $every}", `action "$every" is an unknown fill; use an operation id or $offered`},
		{"{op: release, operation: $unresolved}", "only recover takes a fill"},
		{"{op: turn, session: s1, attempt: a, live_for: $soon}", "`live_for` is `$soon`, an unknown fill; the one fill `live_for` takes is $validity"},
		{"{op: turn, session: s1, attempt: a, live_for: soon}", "`live_for` is `soon`, but it must be a number of host seconds or $validity"},
		{"{op: turn, session: s1, attempt: a, double: [{kind: drop, write: last}]}", "`write` is `last`, but it must be a write number"},
		{"{op: turn, session: s1, attempt: a, double: [{kind: drop, write: $each}, {kind: hold, write: $each}]}", "$each may fill the write of one double fault of a step only"},
		{"{op: turn, session: s1, attempt: a, double: [{kind: drop, write: -1}]}", "a write number starts at 1"},
		{"{op: turn, session: s1, attempt: a, live_for: -5}", "`live_for` is -5; it must be a positive number of seconds"},
	} {
		text := "name: x\nsteps:\n  - {op: cold_start, session: s1, agent: agent-1, principal: alice}\n  - " + tc.step + "\n"
		_, err := ParseScenario("x.yaml", []byte(text))
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "x.yaml:4: ") {
			t.Errorf("%s: got %v, want x.yaml:4: ...%s", tc.step, err, tc.want)
		}
	}
}
