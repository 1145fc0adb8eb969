package simulate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// FuzzParseScenario feeds scenario YAML to the parser. Any input ends in a scenario or a ScenarioError with a
// line, never a panic; a scenario that parses survives a round trip: YAML() then parsing again gives the same
// scenario.
func FuzzParseScenario(f *testing.F) {
	f.Add([]byte("name: x\nsteps:\n  - {op: cold_start, session: s1, agent: agent-1, principal: alice}\n  - {op: turn, session: s1, attempt: a1}\n"))
	f.Add([]byte("name: y\nreplicas: 3\ndeadlines: {turn: 2.5}\nsteps:\n  - {op: prewarm, agent: agent-1, boxes: 2, double: [{kind: delay, delay: 0.1}]}\n  - {op: advance, seconds: 60}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 64<<10 {
			return
		}
		sc, err := ParseScenario("fuzz.yaml", data)
		if err != nil {
			var se *ScenarioError
			if !asScenarioError(err, &se) || se.Line < 1 || se.Msg == "" {
				t.Fatalf("not a ScenarioError with a line: %#v", err)
			}
			return
		}
		y, err := sc.YAML()
		if err != nil {
			t.Fatalf("YAML of a parsed scenario: %v", err)
		}
		again, err := ParseScenario("fuzz.yaml", y)
		if err != nil {
			t.Fatalf("the scenario's own YAML does not parse: %v\n%s", err, y)
		}
		a, _ := json.Marshal(sc)
		b, _ := json.Marshal(again)
		if !bytes.Equal(a, b) {
			t.Fatalf("round trip changed the scenario:\n%s\n%s", a, b)
		}
	})
}

func asScenarioError(err error, se **ScenarioError) bool {
	e, ok := err.(*ScenarioError)
	if ok {
		*se = e
	}
	return ok
}

// FuzzScenarioDeep feeds deep and long structures that random mutation does not reach: nested flow
// sequences and mappings, and long lists of steps, up to depths and lengths far past any real scenario. Each
// must be refused (or parsed) without a crash.
func FuzzScenarioDeep(f *testing.F) {
	f.Add(uint16(5000), uint8(0), uint16(10))
	f.Add(uint16(20000), uint8(1), uint16(1))
	f.Add(uint16(3), uint8(2), uint16(5000))
	f.Fuzz(func(t *testing.T, depth uint16, kind uint8, steps uint16) {
		var b strings.Builder
		b.WriteString("name: deep\nsteps:\n")
		for i := 0; i < int(steps)%20000; i++ {
			fmt.Fprintf(&b, "  - {op: advance, seconds: %d}\n", i%100+1)
		}
		d := int(depth) % 30000
		switch kind % 3 {
		case 0:
			b.WriteString("principals: " + strings.Repeat("[", d) + strings.Repeat("]", d) + "\n")
		case 1:
			b.WriteString("agents: " + strings.Repeat("{a: ", d) + "1" + strings.Repeat("}", d) + "\n")
		default:
			b.WriteString("backend:\n")
			for i := 0; i < d%2000; i++ {
				b.WriteString(strings.Repeat(" ", i+2) + "k:\n")
			}
		}
		_, _ = ParseScenario("deep.yaml", []byte(b.String()))
	})
}
