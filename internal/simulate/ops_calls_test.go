package simulate

import (
	"slices"
	"testing"
)

// TestOpCallsAreTheCallbacksItsStepsMake checks each generated op's declared calls (its spec's calls, from
// which explore aims at unreached callbacks and tells Session steps apart) against what the platform does:
// after a prelude (a Session whose owner is offered an action, one turn, one prewarmed operation), a step
// of every generated op, as its own emitter writes it, is played against the probe provider, and each step
// must call exactly the callbacks its spec declares (plan aside, which a replica calls on its first step).
func TestOpCallsAreTheCallbacksItsStepsMake(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python")
	}
	t.Parallel()
	sc := &Scenario{Name: "op-calls", Replicas: 2, Agents: []AgentSpec{{ID: "agent-1"}},
		Config:     map[string]any{"endpoint": "${ASTRABOX_DOUBLE_URL}/v1"},
		Principals: map[string]Principal{"alice": {Consent: ConsentGranted}, "needs-action": {Consent: ConsentGranted}},
		Steps: []Step{{Op: OpPrewarm, Agent: "agent-1", Boxes: 2, Replica: "r1"},
			{Op: OpColdStart, Session: "s1", Agent: "agent-1", Principal: "needs-action", Replica: "r1"},
			{Op: OpTurn, Session: "s1", Attempt: "t1", Replica: "r1"}}}
	prelude := len(sc.Steps)
	for _, op := range Generated() {
		sc.Steps = append(sc.Steps, op.Emit(&probe{}))
	}
	if err := sc.Validate(); err != nil {
		t.Fatal(err)
	}
	h, err := runParsed(sc, "probe")
	if err != nil {
		t.Fatal(err)
	}
	called := map[int][]Callback{}
	for _, e := range h.Events {
		if e.Call != nil && Callback(e.Call.Method) != CallPlan {
			if cb := Callback(e.Call.Method); !slices.Contains(called[e.Step], cb) {
				called[e.Step] = append(called[e.Step], cb)
			}
		}
	}
	for i := prelude; i < len(sc.Steps); i++ {
		st := sc.Steps[i]
		want := opRegistry[st.Op].calls
		got := called[i+1]
		slices.Sort(got)
		sorted := slices.Sorted(slices.Values(want))
		if !slices.Equal(got, sorted) {
			t.Errorf("step %d (%s) made the platform call %v; its spec declares calls %v: make its spec's calls what its run function calls", i+1, st, got, want)
		}
	}
	if t.Failed() {
		for _, e := range h.Events {
			t.Logf("step %d %s: %s", e.Step, e.Kind, e.Message)
		}
	}
}
