package simulate

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/astrabox-dev/astrabox/internal/double"
)

func TestCopyMapIsDeepAndKeepsNull(t *testing.T) {
	orig := map[string]any{"agent": map[string]any{"model": "m", "tools": []any{"a", map[string]any{"b": 1}}}, "none": nil}
	c := CopyMap(orig)
	c["agent"].(map[string]any)["model"] = "changed"
	c["agent"].(map[string]any)["tools"].([]any)[1].(map[string]any)["b"] = 2
	if orig["agent"].(map[string]any)["model"] != "m" || orig["agent"].(map[string]any)["tools"].([]any)[1].(map[string]any)["b"] != 1 {
		t.Errorf("the copy shares state with the original: %v", orig)
	}
	if v, ok := c["none"]; !ok || v != nil {
		t.Errorf("a null became %#v", v)
	}
	if m := CopyMap(nil); m == nil || len(m) != 0 {
		t.Errorf("CopyMap(nil) = %#v, want an empty map", m)
	}
}

// TestCallArgumentsKeepNull: what the platform sends a provider keeps a null a null, so that synchronize's
// skills_path is None when the Agent has no skills (SYNC-CONTEXT), as the history records it.
func TestCallArgumentsKeepNull(t *testing.T) {
	var skills any
	args := map[string]any{"context": map[string]any{"skills_path": skills, "operation": map[string]any{"deadline": 0.0}}}
	for name, got := range map[string]map[string]any{"sent": withDeadline(args, 12.5), "recorded": recordArgs(args)} {
		b, _ := json.Marshal(got)
		want := `{"context":{"operation":{"deadline":0},"skills_path":null}}`
		if name == "sent" {
			want = `{"context":{"operation":{"deadline":12.5},"skills_path":null}}`
		}
		if string(b) != want {
			t.Errorf("%s: %s, want %s", name, b, want)
		}
	}
}

func TestCanonicalJSON(t *testing.T) {
	for in, want := range map[string]string{
		`{"b": 1, "a": [2, {"d": null, "c": true}]}`: `{"a":[2,{"c":true,"d":null}],"b":1}`,
		``:         `null`,
		`  "x" `:   `"x"`,
		`{broken`:  `{broken`,
		`[1, 2.5]`: `[1,2.5]`,
	} {
		if got := string(CanonicalJSON([]byte(in))); got != want {
			t.Errorf("CanonicalJSON(%q) = %s, want %s", in, got, want)
		}
	}
	// The generation hash reads an absent declaration as {}, never null, so generations stay as they were.
	if got := string(canonicalDeclaration(nil)); got != "{}" {
		t.Errorf("an absent declaration hashes as %s", got)
	}
	if got := string(canonicalDeclaration(json.RawMessage(`{"z":1,"a":2}`))); got != `{"a":2,"z":1}` {
		t.Errorf("a declaration hashes as %s", got)
	}
}

// TestDoubleFaultKindsAreTheDoubles: a scenario's double fault kinds are the double's own names, validated by
// double.ParseFaultKind alone, and each reaches the double as the kind it names.
func TestDoubleFaultKindsAreTheDoubles(t *testing.T) {
	for kind, want := range map[string]double.FaultKind{DoubleDelay: double.Delay, DoubleHold: double.Hold,
		DoubleUnavailable: double.Unavailable, DoubleDrop: double.DropAfterApply} {
		if got := toDoubleFault(DoubleFault{Kind: kind}, "r1").Kind; got != want || got.String() != kind {
			t.Errorf("double fault %q reaches the double as %v, want %v", kind, got, want)
		}
	}
	sc := &Scenario{Name: "x", Replicas: 1, Agents: []AgentSpec{{ID: "agent-1"}},
		Steps: []Step{{Op: OpPrewarm, Agent: "agent-1", Double: []DoubleFault{{Kind: "drop-after-apply"}}}}}
	err := sc.Validate()
	if err == nil || !strings.Contains(err.Error(), `step 1 (prewarm): double fault kind "drop-after-apply"; use delay, hold, unavailable or drop`) {
		t.Errorf("an unknown double fault kind: %v", err)
	}
}
