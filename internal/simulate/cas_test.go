package simulate

import (
	"fmt"
	"testing"
)

// TestSYNC_CAS_EveryField checks that the host refuses a synchronize result when any of the four things it
// compares changed while synchronize ran: refresh revision, authored version, pool lifetime, generation.
func TestSYNC_CAS_EveryField(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python (skipped under -short)")
	}
	for _, change := range []string{"refresh", "version", "pool", "generation"} {
		change := change
		t.Run(change, func(t *testing.T) {
			t.Parallel()
			yaml := fmt.Sprintf("name: cas-%s\nreplicas: 1\nsteps:\n  - {op: prewarm, agent: agent-1, boxes: 1, fault: {kind: supersede, change: %s}}\n  - {op: prewarm, agent: agent-1, boxes: 1}\n", change, change)
			h := play(t, "probe", yaml)
			dumpOnFailure(t, h)
			if !hasCode(h, 1, "PREPARATION_SUPERSEDED") {
				t.Fatalf("a %s change during synchronize was not refused: %v", change, codes(h, 1))
			}
			if b := inventory(h, "box-1"); b == nil || b.State != "discarded" {
				t.Errorf("superseded box: %+v", b)
			}
			if b := inventory(h, "box-2"); b == nil || b.State != "waiting" {
				t.Errorf("the next prewarm did not publish: %+v", b)
			}
		})
	}
}

func TestSupersedeChangeIsValidated(t *testing.T) {
	_, err := ParseScenario("bad.yaml", []byte("name: x\nsteps:\n  - {op: prewarm, agent: agent-1, fault: {kind: supersede, change: weather}}\n"))
	if err == nil || err.Error() != `bad.yaml:3: step 1 (prewarm): fault change "weather"; use refresh, version, pool or generation` {
		t.Fatalf("got %v", err)
	}
	_, err = ParseScenario("bad.yaml", []byte("name: x\nsteps:\n  - {op: prewarm, agent: agent-1, fault: {kind: timeout, change: pool}}\n"))
	if err == nil || err.Error() != "bad.yaml:3: step 1 (prewarm): `change` applies only to the supersede fault" {
		t.Fatalf("got %v", err)
	}
}
