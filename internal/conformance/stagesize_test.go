package conformance

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/astrabox-dev/astrabox/internal/simulate"
)

// TestAStageSmallerThanItsScenarioStartsTheRest: with stages of one replica (Workers.StageReplicas), a
// three-replica scenario takes the stage's replica and double and starts r2 and r3 itself before its first
// step: every replica is recorded as started, once and in replica order, and each serves its callbacks.
func TestAStageSmallerThanItsScenarioStartsTheRest(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 180*time.Second)
	defer cancel()
	_, env := minimalEnv(ctx, t, 1)
	sc, err := simulate.ParseScenario("three.yaml", []byte(`name: three
seed: 1
replicas: 3
principals:
  alice: {consent: granted}
agents:
  - {id: agent-1, creator: alice}
steps:
  - {op: prewarm, agent: agent-1, boxes: 1, replica: r1}
  - {op: prewarm, agent: agent-1, boxes: 1, replica: r2}
  - {op: prewarm, agent: agent-1, boxes: 1, replica: r3}
`))
	if err != nil {
		t.Fatal(err)
	}
	w, err := env.NewWorkers(ctx, 1, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.StageReplicas(1)
	if _, err := w.Run(ctx, sc); err != nil { // plays on the first stage (three replicas); prepares one of one
		t.Fatal(err)
	}
	if got := w.nextStageSize(sc); got != 1 {
		t.Fatalf("stage size after StageReplicas(1): %d", got)
	}
	h, err := w.Run(ctx, sc) // takes the stage of one replica
	if err != nil {
		t.Fatal(err)
	}
	var started []string
	for _, e := range h.Events {
		if e.Op == "start" {
			started = append(started, e.Replica)
		}
	}
	if strings.Join(started, ",") != "r1,r2,r3" {
		t.Errorf("replicas recorded as started: %v, want r1,r2,r3", started)
	}
	served := map[string]bool{}
	for _, c := range h.Calls() {
		if c.Outcome == simulate.OutcomeReturned {
			served[c.Replica] = true
		}
	}
	for _, r := range []string{"r1", "r2", "r3"} {
		if !served[r] {
			t.Errorf("replica %s served no callback; calls: %d", r, len(h.Calls()))
		}
	}
}
