package simulate

import (
	"encoding/json"
	"strings"
	"testing"
)

// Platform clause tests, continued (platform_clauses_test.go has the shared scenarios and the rule: one
// test per `platform` clause of spec/clauses.md, named after the clause).

func TestBOUND_INIT(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python (skipped under -short)")
	}
	t.Parallel()
	h := play(t, "probe", lifecycleYAML)
	dumpOnFailure(t, h)
	for _, e := range stepEvents(h, 1) {
		if e.Engine != nil {
			t.Errorf("session-bound prewarm initialized an engine: %s", e.Message)
		}
	}
	for _, b := range h.Inventory[:2] {
		if b.EngineInitialized {
			t.Errorf("receipt of %s records engine_initialized=true", b.ID)
		}
	}
	// On claim the engine starts only after the Session's material exists.
	ps := callsIn(h, 3, "prepare_session")
	starts := engineStarts(h, "s1")
	if len(ps) != 1 || len(starts) == 0 {
		t.Fatalf("claim: %d prepare_session, %d engine starts", len(ps), len(starts))
	}
	last := seqOf(h, ps[0])
	for _, e := range h.Events {
		if e.Delivery != nil && e.Delivery.From == ps[0].Key && e.Seq > last {
			last = e.Seq
		}
	}
	if starts[0].Step != 3 || starts[0].Seq < last {
		t.Errorf("engine activated at event %d (step %d), before the Session material was delivered (event %d)", starts[0].Seq, starts[0].Step, last)
	}
	if !starts[0].Engine.Fresh {
		t.Errorf("claimed session-bound engine treated as an already initialized vendor runtime")
	}
}

func TestBOUND_INVENTORY(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python (skipped under -short)")
	}
	t.Parallel()
	h := play(t, "probe", lifecycleYAML)
	dumpOnFailure(t, h)
	b := inventory(h, "box-2")
	if b == nil || b.State != "waiting" {
		t.Fatalf("box-2 should still wait in inventory: %+v", b)
	}
	if b.EngineInitialized {
		t.Errorf("receipt records engine_initialized=true")
	}
	has := func(p string) bool {
		for _, f := range b.Files {
			if f == p {
				return true
			}
		}
		return false
	}
	for _, p := range []string{"/usr/local/bin/claude", PluginCacheDir + "/tools/plugin.json", SkillsDir + "/summarize/SKILL.md"} {
		if !has(p) {
			t.Errorf("waiting inventory lacks %s: %v", p, b.Files)
		}
	}
	for _, f := range b.Files {
		if strings.HasPrefix(f, runtimeFilesDir) || strings.HasPrefix(f, SandboxHome+"/.engine") {
			t.Errorf("waiting session-bound inventory holds %s", f)
		}
	}
	if n := len(callsIn(h, 1, "prepare_session")); n != 0 {
		t.Errorf("prewarm called prepare_session %d times", n)
	}
	var prepared int
	for _, e := range stepEvents(h, 1) {
		if strings.Contains(e.Message, "Plugin/Skills caches, control service and shared seats prepared") {
			prepared++
		}
	}
	if prepared != 2 {
		t.Errorf("%d boxes reported their shared resources prepared, want 2", prepared)
	}
}

func TestBOUND_CLAIM(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python (skipped under -short)")
	}
	t.Parallel()
	h := play(t, "probe", lifecycleYAML)
	dumpOnFailure(t, h)
	box1 := inventory(h, "box-1")
	if box1 == nil || box1.State != "claimed" {
		t.Fatalf("box-1: %+v", box1)
	}
	ps := callsIn(h, 3, "prepare_session")
	if len(ps) != 1 || ps[0].Ctx.SandboxID != box1.SandboxID || ps[0].Ctx.Trigger != "claim" {
		t.Fatalf("claim's prepare_session: %+v (box sandbox %s)", ps, box1.SandboxID)
	}
	ds := deliveries(h, ps[0].Key)
	if len(ds) != 2 {
		t.Fatalf("claim delivered %d files", len(ds))
	}
	for _, d := range ds {
		if d.SandboxID != box1.SandboxID {
			t.Errorf("claim delivered %s into %s, not the claimed box's sandbox %s", d.Name, d.SandboxID, box1.SandboxID)
		}
	}
	st := engineStarts(h, "s1")[0]
	if st.Engine.SandboxID != box1.SandboxID || !st.Engine.Fresh {
		t.Errorf("claim activation %+v", st.Engine)
	}
	for _, e := range stepEvents(h, 3) {
		if strings.Contains(e.Message, "cold start") || e.Call != nil && e.Call.Method == "synchronize" {
			t.Errorf("claim did more than claim: %s", e.Message)
		}
	}
	// An ordinary provider's claim reuses the initialized runtime.
	o := play(t, "probe", ordinaryYAML)
	ost := engineStarts(o, "s1")
	if len(ost) != 1 || ost[0].Engine.Fresh || !strings.Contains(ost[0].Message, "Vault substitution") {
		t.Errorf("ordinary claim activation: %+v", ost)
	}
}

// discardYAML: failed claims.
const discardYAML = `name: discard
replicas: 1
steps:
  - {op: prewarm, agent: agent-1, boxes: 3}
  - {op: claim, session: s1, agent: agent-1, principal: raiser}
  - {op: claim, session: s2, agent: agent-1, principal: alice}
  - {op: claim, session: s3, agent: agent-1, principal: ua-at-start}
`

func TestBOUND_DISCARD(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python (skipped under -short)")
	}
	t.Parallel()
	h := play(t, "probe", discardYAML)
	dumpOnFailure(t, h)
	states := map[string]string{}
	for _, b := range h.Inventory {
		states[b.ID] = b.State
	}
	if states["box-1"] != "discarded" || states["box-2"] != "claimed" || states["box-3"] != "discarded" || len(states) != 3 {
		t.Errorf("box states %v, want box-1 discarded, box-2 claimed by s2, box-3 discarded", states)
	}
	for _, step := range []int{2, 4} {
		if n := len(callsIn(h, step, "prepare_session")); n != 1 {
			t.Errorf("step %d: %d prepare_session calls, want exactly the failed one", step, n)
		}
		for _, e := range stepEvents(h, step) {
			if strings.Contains(e.Message, "cold start of session") || strings.Contains(e.Message, "cold-starts") || e.Engine != nil {
				t.Errorf("step %d switched to a cold start or activated: %s", step, e.Message)
			}
		}
	}
	if !hasCode(h, 2, CodeRuntimePreparationFailed) || !hasCode(h, 4, CodeTurnUserActionRequired) {
		t.Errorf("codes: %v / %v", codes(h, 2), codes(h, 4))
	}
	if len(engineStarts(h, "s2")) != 1 {
		t.Errorf("the next claim did not use the next box")
	}
}

// casYAML: a synchronize superseded by another replica's update, then a config change.
const casYAML = `name: cas
replicas: 1
steps:
  - {op: prewarm, agent: agent-1, boxes: 1, fault: {kind: supersede}}
  - {op: prewarm, agent: agent-1, boxes: 1}
  - {op: config_change, agent: agent-1}
  - {op: prewarm, agent: agent-1, boxes: 1}
  - {op: claim, session: s1, agent: agent-1, principal: alice}
`

// churnYAML: a plan whose declaration changes on every call, with an unchanged configuration.
const churnYAML = `name: churn
replicas: 1
config:
  probe: {churn: true}
steps:
  - {op: prewarm, agent: agent-1, boxes: 1}
  - {op: claim, session: s1, agent: agent-1, principal: alice}
`

func TestBOUND_GENERATION(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python (skipped under -short)")
	}
	t.Parallel()
	h := play(t, "probe", churnYAML)
	dumpOnFailure(t, h)
	plans := h.CallsOf("plan")
	if len(plans) != 2 || string(mustJSON(t, plans[0].Args)) != string(mustJSON(t, plans[1].Args)) {
		t.Fatalf("want two plan calls with the same config")
	}
	if string(plans[0].Result.Declaration) == string(plans[1].Result.Declaration) {
		t.Fatalf("the churn provider did not change its declaration")
	}
	if b := inventory(h, "box-1"); b == nil || b.State != "invalidated" {
		t.Errorf("a declaration change did not invalidate waiting inventory: %+v", b)
	}
	ps := callsIn(h, 2, "prepare_session")
	if len(ps) != 1 || ps[0].Ctx.Trigger != "cold_start" {
		t.Fatalf("claim after invalidation: %+v", ps)
	}
	syncGen := ctxArg(h.CallsOf("synchronize")[0]).RuntimeGeneration
	if ctxArg(ps[0]).RuntimeGeneration == syncGen {
		t.Errorf("generation %v did not change with the declaration", syncGen)
	}
	// A config change invalidates waiting inventory too, and the next claim takes the new generation.
	c := play(t, "probe", casYAML)
	if b := inventory(c, "box-2"); b == nil || b.State != "invalidated" {
		t.Errorf("config change: box-2 %+v", b)
	}
	if b := inventory(c, "box-3"); b == nil || b.State != "claimed" {
		t.Errorf("config change: box-3 %+v", b)
	}
	// The provider name enters the generation.
	p := &platform{hist: &History{Provider: "probe"}, o: Options{Config: testConfig()}, sc: &Scenario{}}
	a := &agentState{spec: AgentSpec{ID: "agent-1"}, version: 1, config: p.agentConfig("agent-1", 1), declaration: json.RawMessage(`{"a":1}`)}
	g1 := p.generation(a)
	p.hist.Provider = "probe-2"
	if p.generation(a) == g1 {
		t.Errorf("provider name does not enter the generation")
	}
	p.hist.Provider = "probe"
	a.declaration = json.RawMessage(`{"a": 1}`)
	if p.generation(a) != g1 {
		t.Errorf("an equivalent declaration changed the generation")
	}
}

func TestBOUND_VAULT(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python (skipped under -short)")
	}
	t.Parallel()
	o := play(t, "probe", ordinaryYAML)
	dumpOnFailure(t, o)
	inits := 0
	for _, e := range stepEvents(o, 1) {
		if e.Engine != nil && e.Engine.Initialized && strings.Contains(e.Message, "Vault") {
			inits++
		}
	}
	if inits != 2 {
		t.Errorf("ordinary prewarm: %d initialized boxes with Vault substitution, want 2", inits)
	}
	for _, b := range o.Inventory {
		if !b.EngineInitialized {
			t.Errorf("ordinary box %s receipt says engine_initialized=false", b.ID)
		}
		if !contains(b.Files, SandboxHome+"/.engine/config.json") {
			t.Errorf("ordinary box %s has no Vault-referencing engine config", b.ID)
		}
	}
	// Session-bound: no Vault, no credential in unclaimed inventory, credentials resolved at claim.
	h := play(t, "probe", lifecycleYAML)
	for _, e := range stepEvents(h, 1) {
		if e.Kind == EventPlatform && strings.Contains(e.Message, "prepared") && !strings.Contains(e.Message, "no Vault needed") {
			t.Errorf("session-bound prewarm relied on Vault: %s", e.Message)
		}
	}
	b := inventory(h, "box-2")
	for _, f := range b.Files {
		if strings.HasPrefix(f, SandboxHome) {
			t.Errorf("unclaimed session-bound inventory holds %s", f)
		}
	}
	st := engineStarts(h, "s1")[0]
	if strings.Join(st.Engine.EnvNames, ",") != "PROBE_TOKEN_FILE" {
		t.Errorf("claim did not resolve the Session environment: %v", st.Engine.EnvNames)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
