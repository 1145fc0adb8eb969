package simulate

import (
	"encoding/json"
	"strings"
	"testing"
)

// Platform clause tests, continued (platform_clauses_test.go has the shared scenarios and the rule: one
// test per `platform` clause of spec/clauses.md, named after the clause).

func TestSESSION_WHEN(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python (skipped under -short)")
	}
	t.Parallel()
	h := play(t, "probe", lifecycleYAML)
	dumpOnFailure(t, h)
	if n := len(callsIn(h, 1, "prepare_session")); n != 0 {
		t.Errorf("prewarm called prepare_session %d times (a fake Session)", n)
	}
	triggers := map[int]string{3: "claim", 7: "reattachment", 8: "sandbox_replacement", 9: "cold_start"}
	for step, trig := range triggers {
		ps := callsIn(h, step, "prepare_session")
		if len(ps) != 1 || ps[0].Ctx.Trigger != trig || ctxArg(ps[0]).Trigger != trig {
			t.Errorf("step %d: prepare_session %+v, want one with trigger %s", step, ps, trig)
			continue
		}
		var eng *Event
		for _, e := range stepEvents(h, step) {
			if e.Engine != nil {
				eng = e
			}
		}
		if eng == nil || eng.Seq < seqOf(h, ps[0]) {
			t.Errorf("step %d: engine activation not after prepare_session", step)
		}
	}
	for _, step := range []int{2, 4, 5, 6, 10, 11} {
		if n := len(callsIn(h, step, "prepare_session")); n != 0 {
			t.Errorf("step %d called prepare_session", step)
		}
	}
}

type sessionEcho struct {
	SessionID         string   `json:"session_id"`
	AgentID           string   `json:"agent_id"`
	PrincipalID       string   `json:"principal_id"`
	ConfigKeys        []string `json:"config_keys"`
	RuntimeGeneration string   `json:"runtime_generation"`
	SandboxID         string   `json:"sandbox_id"`
	WorkloadSubject   string   `json:"workload_subject"`
	WorkloadTokenSet  bool     `json:"workload_token_set"`
	Trigger           string   `json:"trigger"`
	TokenPath         string   `json:"token_path"`
}

func echoOf(t *testing.T, c *CallRecord) sessionEcho {
	t.Helper()
	var e sessionEcho
	if err := json.Unmarshal(resultFile(c, "session.json"), &e); err != nil {
		t.Fatalf("%s: session.json: %v", c.Key, err)
	}
	return e
}

func TestSESSION_CONTEXT(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python (skipped under -short)")
	}
	t.Parallel()
	h := play(t, "probe", lifecycleYAML)
	dumpOnFailure(t, h)
	box1 := inventory(h, "box-1")
	for step, want := range map[int]sessionEcho{
		3: {SessionID: "s1", PrincipalID: "alice", SandboxID: box1.SandboxID, RuntimeGeneration: box1.Generation},
		7: {SessionID: "s1", PrincipalID: "alice", SandboxID: box1.SandboxID, RuntimeGeneration: box1.Generation},
		8: {SessionID: "s1", PrincipalID: "alice"},
		9: {SessionID: "s2", PrincipalID: "bob"},
	} {
		ps := callsIn(h, step, "prepare_session")[0]
		e := echoOf(t, ps)
		if e.SessionID != want.SessionID || e.AgentID != "agent-1" || e.PrincipalID != want.PrincipalID {
			t.Errorf("step %d: ids %+v", step, e)
		}
		if want.SandboxID != "" && e.SandboxID != want.SandboxID || e.SandboxID != ps.Ctx.SandboxID {
			t.Errorf("step %d: sandbox %s (call on %s, want %s)", step, e.SandboxID, ps.Ctx.SandboxID, want.SandboxID)
		}
		if want.RuntimeGeneration != "" && e.RuntimeGeneration != want.RuntimeGeneration || !strings.HasPrefix(e.RuntimeGeneration, "gen-") {
			t.Errorf("step %d: generation %s, want %s", step, e.RuntimeGeneration, want.RuntimeGeneration)
		}
		if e.WorkloadSubject != "workload:"+want.SessionID || !e.WorkloadTokenSet {
			t.Errorf("step %d: workload identity %q token set %v", step, e.WorkloadSubject, e.WorkloadTokenSet)
		}
		if strings.Join(e.ConfigKeys, ",") != "agent,endpoint,packages,secrets,skills" {
			t.Errorf("step %d: config keys %v", step, e.ConfigKeys)
		}
	}
	// The reattach step names no principal: it comes from the persisted owner.
	sc, _ := ParseScenario("x.yaml", []byte(lifecycleYAML))
	if sc.Steps[6].Principal != "" {
		t.Fatalf("scenario step 7 should not name a principal")
	}
	// Each prepare_session gets its own workload identity token, planted as a secret.
	planted := map[string]bool{}
	for _, s := range h.Secrets {
		planted[s.Value] = true
	}
	n := 0
	for _, c := range h.CallsOf("prepare_session") {
		if wi := ctxArg(c).WorkloadIdentity; wi != nil && planted[wi.Token] {
			n++
		}
	}
	if n != 4 {
		t.Errorf("%d workload identity tokens planted, want 4", n)
	}
}

func TestSESSION_DELIVERY(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python (skipped under -short)")
	}
	t.Parallel()
	h := play(t, "probe", lifecycleYAML)
	dumpOnFailure(t, h)
	paths := map[string]string{} // session/name -> path
	for _, step := range []int{3, 7, 8, 9} {
		ps := callsIn(h, step, "prepare_session")[0]
		ds := deliveries(h, ps.Key)
		if len(ds) != 2 {
			t.Fatalf("step %d delivered %d files", step, len(ds))
		}
		echo := echoOf(t, ps)
		for _, d := range ds {
			if d.Mode != "0600" || d.Owner != OwnerWorkload {
				t.Errorf("%s: mode %s owner %s", d.Path, d.Mode, d.Owner)
			}
			if !strings.HasPrefix(d.Path, SandboxHome+"/") || strings.HasPrefix(d.Path, SandboxWorkspace) {
				t.Errorf("%s is not in the private home, outside the workspace", d.Path)
			}
			if d.Name == "token.json" && d.Path != echo.TokenPath {
				t.Errorf("delivered to %s, but context.file_path said %s", d.Path, echo.TokenPath)
			}
			if d.Size != len(resultFile(ps, d.Name)) || d.SandboxID != ps.Ctx.SandboxID {
				t.Errorf("%s: size %d sandbox %s", d.Path, d.Size, d.SandboxID)
			}
			key := d.Session + "/" + d.Name
			if old, ok := paths[key]; ok && old != d.Path {
				t.Errorf("%s moved from %s to %s", key, old, d.Path)
			}
			paths[key] = d.Path
		}
	}
	// prepare_turn's files land at the same path.
	for _, c := range h.CallsOf("prepare_turn") {
		for _, d := range deliveries(h, c.Key) {
			if d.Path != paths[d.Session+"/"+d.Name] {
				t.Errorf("turn delivered %s to %s", d.Name, d.Path)
			}
		}
	}
	// The file is really there: the provider reads it back through its sandbox handle.
	in := callsIn(h, 5, "prepare_turn")[0]
	found := false
	for _, e := range h.Events {
		if e.Sandbox != nil && e.Sandbox.Call == in.Key && e.Sandbox.Op == "read_file" {
			found = true
			if e.Sandbox.Path != paths["s1/session.json"] || e.Sandbox.Error != "" || e.Sandbox.Size != len(resultFile(callsIn(h, 3, "prepare_session")[0], "session.json")) {
				t.Errorf("read back %+v", e.Sandbox)
			}
		}
	}
	if !found {
		t.Errorf("the provider did not read the delivered file")
	}
}

// envYAML: a turn that returns environment, between ordinary turns, and a reattachment.
const envYAML = `name: env-fixed
replicas: 1
steps:
  - {op: cold_start, session: s1, agent: agent-1, principal: alice}
  - {op: turn, session: s1, attempt: t1}
  - {op: turn, session: s1, attempt: env1}
  - {op: turn, session: s1, attempt: t2}
  - {op: reattach, session: s1}
`

func TestSESSION_ENV_FIXED(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python (skipped under -short)")
	}
	t.Parallel()
	h := play(t, "probe", envYAML)
	dumpOnFailure(t, h)
	starts := engineStarts(h, "s1")
	if len(starts) != 2 || starts[0].Step != 1 || starts[1].Step != 5 {
		t.Fatalf("engine activations: %d", len(starts))
	}
	if !hasCode(h, 3, CodeTurnPreparationFailed) || len(writes(h, "env1")) != 0 {
		t.Errorf("environment from prepare_turn did not fail the write: %v", codes(h, 3))
	}
	if len(writes(h, "t1")) != 1 || len(writes(h, "t2")) != 1 {
		t.Errorf("ordinary turns not written")
	}
	for _, st := range starts {
		if strings.Join(st.Engine.EnvNames, ",") != "PROBE_TOKEN_FILE" {
			t.Errorf("activation env %v", st.Engine.EnvNames)
		}
	}
}

const codexYAML = `name: codex
replicas: 1
engine: codex
steps:
  - {op: cold_start, session: s1, agent: agent-1, principal: alice}
  - {op: turn, session: s1, attempt: t1}
  - {op: cold_start, session: s2, agent: agent-1, principal: noenv}
  - {op: cold_start, session: s3, agent: agent-1, principal: raiser}
`

func TestSESSION_ENV_ADAPTER(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python (skipped under -short)")
	}
	t.Parallel()
	t.Run("claude-code", func(t *testing.T) {
		h := play(t, "probe", lifecycleYAML)
		dumpOnFailure(t, h)
		for _, st := range engineStarts(h, "s1") {
			e := st.Engine
			if e.Adapter != EngineClaudeCode || strings.Join(e.EnvNames, ",") != "PROBE_TOKEN_FILE" {
				t.Errorf("claude-code activation %+v", e)
			}
			if strings.Join(e.Probe, " ") != "claude -v" || len(e.ProbeEnv) != 0 {
				t.Errorf("CLI probe %v with env %v; it must run without the Session environment", e.Probe, e.ProbeEnv)
			}
		}
	})
	t.Run("codex", func(t *testing.T) {
		h := play(t, "probe", codexYAML)
		dumpOnFailure(t, h)
		if !hasCode(h, 1, CodeRuntimePreparationFailed) || len(engineStarts(h, "s1")) != 0 {
			t.Errorf("codex accepted Session environment: %v", codes(h, 1))
		}
		if len(callsIn(h, 2, "prepare_turn")) != 0 || len(writes(h, "t1")) != 0 {
			t.Errorf("a turn reached a Session whose activation was blocked")
		}
		s2 := engineStarts(h, "s2")
		if len(s2) != 1 || s2[0].Engine.Adapter != EngineCodex || len(s2[0].Engine.EnvNames) != 0 {
			t.Errorf("codex without environment: %+v", s2)
		}
		if !hasCode(h, 4, CodeRuntimePreparationFailed) {
			t.Errorf("exception: %v", codes(h, 4))
		}
		noLeak(t, h, "probe-internal-detail")
	})
}

// noLeak asserts that a provider's exception text reaches no platform event message.
func noLeak(t *testing.T, h *History, text string) {
	t.Helper()
	for _, e := range h.Events {
		if e.Call == nil && (strings.Contains(e.Message, text) || strings.Contains(string(mustJSON(t, e.Data)), text)) {
			t.Errorf("provider text exposed: %s", e.Message)
		}
	}
}
