package simulate

import (
	"errors"
	"strings"
	"testing"
)

// TestEmptyAndTaggedValuesAreRefusedAtTheirLine: a required field given an empty value (an empty string, or
// an application tag with no value, `agent: !000000`, which FuzzParseScenario found) used to pass validation
// and then vanish from the scenario's own YAML, which no longer parsed ("missing `agent`"). Each is refused
// at its line now, and every scenario that parses reads back the same.
func TestEmptyAndTaggedValuesAreRefusedAtTheirLine(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"name: x\nsteps:\n  - op: cold_start\n    session: s1\n    agent: !000000\n    principal: alice\n", "YAML tag !000000 is not supported"},
		{"name: x\nsteps:\n  - {op: prewarm, agent: \"\"}\n", "missing `agent`"},
		{"name: x\nsteps:\n  - {op: prewarm, agent: !!str }\n", "missing `agent`"},
		{"name: x\nsteps:\n  - {op: prewarm, agent: agent-1, boxes: !n 3}\n", "YAML tag !n is not supported"},
	} {
		_, err := ParseScenario("s.yaml", []byte(tc.in))
		var se *ScenarioError
		if !errors.As(err, &se) || se.Line < 3 || !strings.Contains(se.Msg, tc.want) {
			t.Errorf("%q: got %v, want a ScenarioError at its line saying %q", tc.in, err, tc.want)
		}
	}
}
