package explore

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/astrabox-dev/astrabox/internal/conformance"
	"github.com/astrabox-dev/astrabox/internal/harness"
	"github.com/astrabox-dev/astrabox/internal/simulate"
)

// cancelOnRequestYAML cancels a turn as soon as its first request reaches the double (slowed down there). The
// turn's deadline, where the cancel would come without a request, is a minute away, so that which of the two
// sent it shows however loaded the machine is.
const cancelOnRequestYAML = `name: cancel-on-request
replicas: 1
deadlines: {turn: 60}
steps:
  - {op: cold_start, session: s1, agent: agent-1, principal: alice}
  - op: turn
    session: s1
    attempt: t1
    fault: {kind: cancel, on: request, after: 2}
    double: [{kind: delay, delay: 0.08}]
  - {op: turn, session: s1, attempt: t2}
`

// TestCancelOnRequest: exploration's cancel meets the callback while its request is in flight, without a
// fixed wait. A provider that waits for its request ends cancelled with its write inside the call; one that
// does not (the GEN-CANCEL-CLEAN fixture) is caught with its write landing after it settled.
func TestCancelOnRequest(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python (skipped under -short)")
	}
	sc, err := simulate.ParseScenario("cancel-on-request.yaml", []byte(cancelOnRequestYAML))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	env, w := setup(t, filepath.Join("..", "..", "examples", "providers", "reference"), 1)
	h, err := w.Run(ctx, clone(sc))
	if err != nil {
		t.Fatal(err)
	}
	var turn *simulate.CallRecord
	for _, c := range h.CallsOf("prepare_turn") {
		turn = c
		break
	}
	if turn == nil || turn.Outcome != simulate.OutcomeCancelled || !turn.CancelSent {
		t.Fatalf("the cancelled turn: %+v", turn)
	}
	if d := time.Duration(turn.DurationNS); d >= 30*time.Second {
		t.Errorf("the cancel waited %v: it should come when the request arrives, not at the turn's 60 s deadline", d)
	}
	if ids, _ := conformance.Failing(env.Evidence([]*simulate.History{h}), nil, nil, nil); len(ids) > 0 {
		t.Errorf("the reference provider fails %v", ids)
	}

	env, w = setup(t, filepath.Join("..", "..", "testdata", "providers", "broken", "gen-cancel-clean"), 1)
	h, err = w.Run(ctx, clone(sc))
	if err != nil {
		t.Fatal(err)
	}
	if ids, _ := conformance.Failing(env.Evidence([]*simulate.History{h}), nil, nil, nil); !slices.Contains(ids, "GEN-CANCEL-CLEAN") {
		t.Errorf("the gen-cancel-clean fixture passes GEN-CANCEL-CLEAN under a cancel on request (fails %v)", ids)
	}
}

// lateCancelYAML cancels a turn at a deadline (0.05 s) that passes while its request is held by the double.
const lateCancelYAML = `name: late-cancel
replicas: 1
steps:
  - {op: cold_start, session: s1, agent: agent-1, principal: alice}
  - op: turn
    session: s1
    attempt: t1
    fault: {kind: cancel, after: 0.05}
    double: [{kind: delay, delay: 0.2}]
  - {op: turn, session: s1, attempt: t2}
`

// TestLateCancelIsNotTheProviders reproduces a loaded machine deterministically: the kit's cancel is held back
// until after the provider, free to take it at its deadline, has already returned. That the cancel came too
// late is the kit's delivery, not the provider's fault: a correct provider still passes TURN-WITHIN-DEADLINE
// (it failed as "ignored the platform's cancellation" when crossing was judged by the measured duration).
func TestLateCancelIsNotTheProviders(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python (skipped under -short)")
	}
	sc, err := simulate.ParseScenario("late-cancel.yaml", []byte(lateCancelYAML))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	env, w := setup(t, filepath.Join("..", "..", "examples", "providers", "reference"), 1)
	harness.BeforeCancel = func(replied func() bool) {
		for end := time.Now().Add(30 * time.Second); !replied() && time.Now().Before(end); {
			time.Sleep(5 * time.Millisecond)
		}
	}
	h, err := w.Run(ctx, clone(sc))
	harness.BeforeCancel = nil
	if err != nil {
		t.Fatal(err)
	}
	turn := h.CallsOf("prepare_turn")[0]
	if !turn.CancelSent || turn.Outcome != simulate.OutcomeReturned {
		t.Errorf("the turn whose cancel came after its reply: outcome %s, cancel sent %v (%v); want returned, sent", turn.Outcome, turn.CancelSent, time.Duration(turn.DurationNS))
	}
	if ids, _ := conformance.Failing(env.Evidence([]*simulate.History{h}), nil, nil, nil); len(ids) > 0 {
		t.Errorf("a cancel the kit delivered late fails the reference provider on %v", ids)
	}
}
