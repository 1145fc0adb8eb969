package simulate

import (
	"encoding/json"
	"testing"
)

// TestAStageSmallerThanItsScenarioIsTakenAndTopped: a scenario of two replicas takes a stage of one (its
// double and r1) and starts r2 itself before its first step, instead of dropping the stage and starting
// everything afresh; its history is the one the same scenario gives on a stage of its own size, and each
// replica is still its own host (the hosts provider declares its directories and what it saw).
func TestAStageSmallerThanItsScenarioIsTakenAndTopped(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python")
	}
	sc, ctx, o, hosts := hostsRun(t)
	o.Hosts = hosts
	histories := map[int]*History{}
	for _, size := range []int{1, 2} {
		st := PrepareStage(ctx, o, size)
		so := o
		so.Stage = st
		h, err := Run(ctx, sc, so)
		if err != nil {
			t.Fatalf("stage of %d: %v", size, err)
		}
		if st.platform.Load() == nil {
			t.Fatalf("the scenario of %d replicas did not take the stage of %d", sc.Replicas, size)
		}
		histories[size] = h
	}
	started := func(h *History) (out []string) {
		for _, e := range h.Events {
			if e.Op == "start" {
				out = append(out, e.Replica)
			}
		}
		return out
	}
	for size, h := range histories {
		if got := started(h); len(got) != 2 || got[0] != "r1" || got[1] != "r2" {
			t.Errorf("stage of %d: replicas recorded as started %v, want [r1 r2]", size, got)
		}
		homes := map[string]bool{}
		for _, c := range h.CallsOf("plan") {
			if c.Result == nil {
				t.Fatalf("stage of %d: plan on %s did not return: %s", size, c.Replica, c.ProcessError)
			}
			var d map[string]any
			if err := json.Unmarshal(c.Result.Declaration, &d); err != nil {
				t.Fatal(err)
			}
			if d["seen"] != nil && d["seen"] != c.Replica {
				t.Errorf("stage of %d: plan on %s saw a marker file written by %v", size, c.Replica, d["seen"])
			}
			if home, _ := d["home"].(string); home != "" {
				homes[c.Replica+"|"+home] = true
			}
		}
		if len(homes) < 2 {
			t.Errorf("stage of %d: plans ran with homes %v, want one per replica", size, homes)
		}
	}
	if a, b := len(histories[1].Calls()), len(histories[2].Calls()); a != b {
		t.Errorf("the scenario made %d calls on a stage of one and %d on a stage of two", a, b)
	}
}
