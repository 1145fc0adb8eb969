package simulate

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/astrabox-dev/astrabox/internal/harness"
)

func TestParseScenarioErrors(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		line       int
		want       []string // substrings of the message
	}{
		{"unknown op", "name: x\nsteps:\n  - {op: prewarm, agent: agent-1}\n  - op: fly\n", 4,
			[]string{`step 2: unknown op "fly"`, "use one of", "cold_start", "turn"}},
		{"unknown step field", "name: x\nsteps:\n  - op: cold_start\n    session: s1\n    agent: agent-1\n    principal: a\n    colour: red\n", 7,
			[]string{"unknown field `colour` in a step", "docs/scenarios.md"}},
		{"field of another op", "name: x\nsteps:\n  - {op: prewarm, agent: agent-1, attempt: a1}\n", 3,
			[]string{`step 1 (prewarm): field "attempt" does not apply to this step`}},
		{"unknown top-level field", "name: x\nbogus: 1\nsteps:\n  - {op: prewarm, agent: agent-1}\n", 2,
			[]string{"unknown field `bogus` at the top level"}},
		{"missing field", "name: x\nsteps:\n  - {op: cold_start, session: s1, agent: agent-1, principal: a}\n  - {op: turn, session: s1}\n", 4,
			[]string{"step 2 (turn): missing `attempt`"}},
		{"missing name", "steps:\n  - {op: prewarm, agent: agent-1}\n", 1, []string{"missing `name`"}},
		{"no steps", "name: x\nseed: 3\n", 1, []string{"no `steps`", "- op: cold_start"}},
		{"empty file", "", 1, []string{"the file is empty"}},
		{"wrong type", "name: x\nreplicas: two\nsteps:\n  - {op: prewarm, agent: agent-1}\n", 2,
			[]string{"`replicas` is `two` (text), but it must be a number"}},
		{"wrong type in a step", "name: x\nsteps:\n  - {op: prewarm, agent: agent-1}\n  - {op: advance, seconds: soon}\n", 4,
			[]string{"`seconds` is `soon` (text), but it must be a number"}},
		{"steps not a list", "name: x\nsteps: {op: prewarm}\n", 2, []string{"`steps` is a mapping, but it must be a list"}},
		{"step not a mapping", "name: x\nsteps:\n  - cold_start\n", 3, []string{"each step must be a mapping"}},
		{"document not a mapping", "- a\n- b\n", 1, []string{"the document is a list"}},
		{"undeclared session", "name: x\nsteps:\n  - {op: cold_start, session: s1, agent: agent-1, principal: a}\n  - {op: turn, session: s2, attempt: a1}\n", 4,
			[]string{`session "s2" is not started by an earlier claim or cold_start step`}},
		{"session used before it starts", "name: x\nsteps:\n  - {op: reattach, session: s1}\n  - {op: cold_start, session: s1, agent: agent-1, principal: a}\n", 3,
			[]string{`session "s1" is not started`}},
		{"replica out of range", "name: x\nreplicas: 2\nsteps:\n  - {op: prewarm, agent: agent-1, replica: r3}\n", 4,
			[]string{`replica "r3" does not exist; this scenario has r1 to r2`}},
		{"replica badly named", "name: x\nsteps:\n  - {op: prewarm, agent: agent-1, replica: replica-1}\n", 3,
			[]string{`replica "replica-1" does not exist`}},
		{"too many replicas", "name: x\nseed: 1\nreplicas: 40\nsteps:\n  - {op: prewarm, agent: agent-1}\n", 3,
			[]string{"`replicas` must be between 1 and 16, got 40"}},
		{"unknown agent", "name: x\nsteps:\n  - {op: prewarm, agent: agent-9}\n", 3, []string{`unknown agent "agent-9"`, "under `agents`"}},
		{"unknown engine", "name: x\nengine: vim\nsteps:\n  - {op: prewarm, agent: agent-1}\n", 2, []string{`unknown engine "vim"`, "claude-code, codex"}},
		{"bad fault", "name: x\nsteps:\n  - {op: prewarm, agent: agent-1, fault: {kind: meteor}}\n", 3,
			[]string{`fault kind "meteor"`, "timeout, cancel, host_loss or supersede"}},
		{"on for a timeout", "name: x\nsteps:\n  - {op: cold_start, session: s1, agent: agent-1, principal: alice}\n  - {op: turn, session: s1, attempt: t1, fault: {kind: timeout, on: request}}\n", 4,
			[]string{`fault on "request"`, "only the cancel fault takes `on`"}},
		{"on something else", "name: x\nsteps:\n  - {op: cold_start, session: s1, agent: agent-1, principal: alice}\n  - {op: turn, session: s1, attempt: t1, fault: {kind: cancel, on: response}}\n", 4,
			[]string{`fault on "response"`, "its values are request and write"}},
		{"bad double fault", "name: x\nsteps:\n  - {op: prewarm, agent: agent-1, double: [{kind: explode}]}\n", 3,
			[]string{`double fault kind "explode"`}},
		{"bad consent", "name: x\nprincipals:\n  bob: {consent: maybe}\nsteps:\n  - {op: prewarm, agent: agent-1}\n", 2,
			[]string{`principal "bob": consent must be granted or pending`}},
		{"negative advance", "name: x\nsteps:\n  - {op: advance, seconds: -1}\n", 3, []string{"`seconds` is -1; it must be a positive number of seconds"}},
		{"yaml syntax: flow mapping", "name: x\nsteps:\n  - {op: prewarm agent: agent-1}\n", 3, []string{"did not find expected"}},
		{"yaml syntax: indentation", "name: x\nsteps:\n  - op: prewarm\n   agent: agent-1\n", 4, []string{"did not find expected"}},
		{"yaml syntax: tab", "name: x\nsteps:\n\t- op: prewarm\n", 3, []string{"cannot start any token"}},
		{"duplicate key", "name: x\nseed: 1\nseed: 2\nsteps:\n  - {op: prewarm, agent: agent-1}\n", 3, []string{`"seed" already defined at line 2`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseScenario("bad.yaml", []byte(tc.yaml))
			var se *ScenarioError
			if !errors.As(err, &se) {
				t.Fatalf("got %v, want a *ScenarioError", err)
			}
			if se.File != "bad.yaml" || se.Line != tc.line {
				t.Errorf("at %s:%d, want bad.yaml:%d (%v)", se.File, se.Line, tc.line, err)
			}
			if !strings.HasPrefix(err.Error(), "bad.yaml:") {
				t.Errorf("error does not start with file:line: %v", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(se.Msg, w) {
					t.Errorf("message %q lacks %q", se.Msg, w)
				}
			}
			for _, bad := range []string{"simulate.", "!!", "unmarshal", "\n"} {
				if strings.Contains(se.Msg, bad) {
					t.Errorf("message %q shows Go or YAML internals (%q)", se.Msg, bad)
				}
			}
		})
	}
}

func TestLoadScenarioMissingFile(t *testing.T) {
	_, err := LoadScenario(filepath.Join(t.TempDir(), "absent.yaml"))
	if err == nil || !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "absent.yaml") {
		t.Fatalf("got %v", err)
	}
}

// TestShippedScenariosParse parses every example scenario, the default suite and this package's test data,
// and round-trips each through YAML().
func TestShippedScenariosParse(t *testing.T) {
	var files []string
	for _, glob := range []string{"../../examples/scenarios/*.yaml", "../conformance/suite/*.yaml", "testdata/*.yaml"} {
		m, err := filepath.Glob(glob)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	examples := 0
	for _, f := range files {
		if strings.Contains(f, "examples/scenarios") {
			examples++
		}
		sc, err := LoadScenario(f)
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		if sc.Description == "" && !strings.Contains(f, "testdata") {
			t.Errorf("%s has no description", f)
		}
		out, err := sc.YAML()
		if err != nil {
			t.Fatal(err)
		}
		again, err := ParseScenario(f+" (re-encoded)", out)
		if err != nil {
			t.Errorf("%s does not round-trip: %v\n%s", f, err, out)
			continue
		}
		if string(mustJSON(t, again)) != string(mustJSON(t, sc)) {
			t.Errorf("%s changed in a round trip", f)
		}
	}
	if examples < 3 {
		t.Errorf("%d example scenarios in examples/scenarios, want at least 3", examples)
	}
}

// TestExampleScenariosPlay plays every file of examples/scenarios against the reference provider through the
// real harness: each step is played and reaches the provider where it should.
func TestExampleScenariosPlay(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python (skipped under -short)")
	}
	files, _ := filepath.Glob("../../examples/scenarios/*.yaml")
	dir, _ := filepath.Abs("../../examples/providers/reference")
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			t.Parallel()
			sc, err := LoadScenario(f)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			h, err := Run(ctx, sc, Options{Python: "python3", ProjectDir: dir, Target: "reference_provider.provider:ReferenceProvider",
				Paths: []string{filepath.Join(dir, "src")}, Config: testConfig(), Limits: harness.DefaultLimits()})
			if err != nil {
				t.Fatal(err)
			}
			dumpOnFailure(t, h)
			if h.Aborted != "" || h.Provider == "" {
				t.Fatalf("aborted %q, provider %q", h.Aborted, h.Provider)
			}
			for i, st := range sc.Steps {
				ev := stepEvents(h, i+1)
				if len(ev) == 0 || ev[0].Kind != EventStep {
					t.Errorf("step %d (%s) was not played", i+1, st.Op)
				}
			}
			if len(h.Calls()) == 0 {
				t.Errorf("no callback reached the provider")
			}
			if check := exampleExpectations[filepath.Base(f)]; check != nil {
				check(t, h)
			} else {
				t.Errorf("no expectations for %s: add them to exampleExpectations", f)
			}
		})
	}
}

// exampleExpectations say what each example shows with the reference provider, as its comments promise.
var exampleExpectations = map[string]func(t *testing.T, h *History){
	"session-bound-claim.yaml": func(t *testing.T, h *History) {
		if b := inventory(h, "box-1"); b == nil || b.State != "claimed" || b.EngineInitialized {
			t.Errorf("box-1: %+v", b)
		}
		if len(writes(h, "a1")) != 1 || len(callsIn(h, 3, "prepare_turn")) < 2 || len(callsIn(h, 4, "prepare_turn")) != 1 {
			t.Errorf("turn a1: %d writes, %d calls, retry %d calls", len(writes(h, "a1")), len(callsIn(h, 3, "prepare_turn")), len(callsIn(h, 4, "prepare_turn")))
		}
	},
	"lost-host-recovery.yaml": func(t *testing.T, h *History) {
		if !hasCode(h, 1, "OPERATION_UNRESOLVED") || !hasCode(h, 4, "OPERATION_UNRESOLVED") || len(callsIn(h, 2, "recover")) != 1 {
			t.Errorf("unresolved: %v %v", codes(h, 1), codes(h, 4))
		}
		if !hasCode(h, 6, "OPERATION_EXPIRED") || len(callsIn(h, 6, "recover")) != 0 {
			t.Errorf("expiry: %v", codes(h, 6))
		}
		if b := inventory(h, "box-3"); b == nil || b.State != "waiting" {
			t.Errorf("final prewarm: %+v", b)
		}
	},
	"consent-user-action.yaml": func(t *testing.T, h *History) {
		for step, code := range map[int]string{3: CodeTurnUserActionRequired, 5: "CONSOLE_SEND_BLOCKED", 6: CodeForbidden} {
			if !hasCode(h, step, code) {
				t.Errorf("step %d: %v, want %s", step, codes(h, step), code)
			}
		}
		if len(callsIn(h, 7, "perform_user_action")) != 1 {
			t.Errorf("the offered operation was not performed: %v", codes(h, 7))
		}
		if w := writes(h, "b1"); len(w) != 1 || w[0].Step != 8 {
			t.Errorf("explicit retry of b1: %d writes", len(w))
		}
	},
	"turn-deadlines.yaml": func(t *testing.T, h *History) {
		for _, step := range []int{2, 3} {
			c := callsIn(h, step, "prepare_turn")
			if len(c) != 1 || c[0].Outcome == OutcomeReturned || !hasCode(h, step, CodeTurnPreparationFailed) {
				t.Errorf("step %d: %v", step, codes(h, step))
			}
		}
		if len(writes(h, "t2")) != 0 || len(writes(h, "t1")) != 1 || len(writes(h, "t3")) != 1 {
			t.Errorf("writes t1 %d t2 %d t3 %d", len(writes(h, "t1")), len(writes(h, "t2")), len(writes(h, "t3")))
		}
	},
}
