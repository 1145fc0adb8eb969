package simulate

import (
	"strings"
	"testing"
)

// TestPresenceFollowsEdits: a step's fields come from the step itself, so editing a parsed step the way the
// shrinker does (removing faults, simplifying values, dropping a value) and validating and writing it again
// gives the edited step, never the file's; only a zero the file gave explicitly (`boxes: 0`) stays present.
func TestPresenceFollowsEdits(t *testing.T) {
	src := `name: edits
replicas: 2
agents: [{id: agent-1}]
steps:
  - op: prewarm
    agent: agent-1
    boxes: 3
    fault: {kind: host_loss}
    double: [{kind: hold, method: PUT, times: 1}]
  - op: prewarm
    agent: agent-1
    boxes: 0
  - op: cold_start
    session: s1
    agent: agent-1
    principal: alice
  - op: turn
    session: s1
    attempt: a1
    live_for: 600
    via: console
    images: 2
`
	sc, err := ParseScenario("edits.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(sc.Steps[1].fields(), ","); got != "op,agent,boxes" {
		t.Fatalf("an explicit boxes: 0 is not present: %s", got)
	}
	ed := sc.Clone()
	ed.Steps[0].Fault, ed.Steps[0].Double = nil, nil // the shrinker's removeFaults
	ed.Steps[0].Boxes = 0                            // a removed value: the default again, not an explicit zero
	ed.Steps[3] = ed.Steps[3].Simplified()           // the shrinker's simplifyValues
	if got := strings.Join(ed.Steps[0].fields(), ","); got != "op,agent" {
		t.Errorf("after the edit the first prewarm has %s", got)
	}
	if got := strings.Join(ed.Steps[3].fields(), ","); got != "op,session,attempt" {
		t.Errorf("after simplifying, the turn has %s", got)
	}
	if err := ed.Validate(); err != nil {
		t.Fatalf("the edited scenario does not validate: %v", err)
	}
	if ed.Steps[0].Boxes != 1 || ed.Steps[1].Boxes != 0 {
		t.Errorf("boxes after validation: %d (want the default 1), %d (want the explicit 0)", ed.Steps[0].Boxes, ed.Steps[1].Boxes)
	}
	y, err := ed.YAML()
	if err != nil {
		t.Fatal(err)
	}
	for _, gone := range []string{"fault:", "double:", "live_for:", "via:", "images:", "boxes: 3"} {
		if strings.Contains(string(y), gone) {
			t.Errorf("the written scenario still has %q:\n%s", gone, y)
		}
	}
	back, err := ParseScenario("edited.yaml", y)
	if err != nil {
		t.Fatalf("the written scenario does not parse: %v\n%s", err, y)
	}
	for i := range ed.Steps {
		a, b := ed.Steps[i], back.Steps[i]
		a.Line, b.Line, a.zeros, b.zeros = 0, 0, nil, nil
		if !a.Equal(b) {
			t.Errorf("step %d written and read back: %+v, want %+v", i+1, b, a)
		}
	}
	if back.Steps[1].Boxes != 0 || back.Steps[0].Boxes != 1 {
		t.Errorf("read back, the prewarms have %d and %d boxes", back.Steps[0].Boxes, back.Steps[1].Boxes)
	}
}

// TestPresenceRefusesFieldsOfOtherOps: a field an op does not take is refused whether the step came from a
// file or was built (generated, edited) in code.
func TestPresenceRefusesFieldsOfOtherOps(t *testing.T) {
	sc := &Scenario{Name: "x", Replicas: 1, Agents: []AgentSpec{{ID: "agent-1"}},
		Steps: []Step{{Op: OpRelease, Boxes: 2}}}
	if err := sc.Validate(); err == nil || !strings.Contains(err.Error(), `field "boxes" does not apply to this step`) {
		t.Errorf("a release with boxes: %v", err)
	}
	_, err := ParseScenario("x.yaml", []byte("name: x\nsteps:\n  - op: release\n    boxes: 0\n"))
	if err == nil || !strings.Contains(err.Error(), `field "boxes" does not apply to this step`) {
		t.Errorf("a release with an explicit boxes: 0: %v", err)
	}
}
