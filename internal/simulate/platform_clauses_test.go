package simulate

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/astrabox-dev/astrabox/internal/discovery"
)

// One test per `platform` clause of spec/clauses.md, named after the clause. Each plays a scenario through
// the real harness against an example provider of testdata/providers and asserts what the platform did,
// from the history. Scenarios shared by several clauses run once (see play).

// lifecycleYAML: session-bound prewarm, claim, input refresh, turns, reattachment, sandbox replacement and a
// cold start with a reconnect retry, across two replicas.
const lifecycleYAML = `name: lifecycle
seed: 11
replicas: 2
config:
  endpoint: "${ASTRABOX_DOUBLE_URL}/v1"
steps:
  - {op: prewarm, agent: agent-1, boxes: 2, replica: r1}     # 1
  - {op: prewarm, agent: agent-1, boxes: 0, replica: r2}     # 2
  - {op: claim, session: s1, agent: agent-1, principal: alice, replica: r2}  # 3
  - {op: refresh_inputs, session: s1, replica: r1}            # 4
  - {op: turn, session: s1, attempt: inspect1, replica: r1}   # 5
  - {op: turn, session: s1, attempt: reread1, replica: r2}    # 6
  - {op: reattach, session: s1, replica: r2}                  # 7
  - {op: replace_sandbox, session: s1, replica: r1}           # 8
  - {op: cold_start, session: s2, agent: agent-1, principal: bob, replica: r1}  # 9
  - {op: turn, session: s2, attempt: t2, replica: r2}         # 10
  - {op: retry, session: s2, attempt: t2, replica: r1}        # 11
`

// ordinaryYAML: the same provider with session_bound=False.
const ordinaryYAML = `name: ordinary
replicas: 1
config:
  probe: {bound: false}
steps:
  - {op: prewarm, agent: agent-1, boxes: 2}
  - {op: claim, session: s1, agent: agent-1, principal: alice}
`

func TestEP_CONFLICT(t *testing.T) {
	t.Parallel()
	decl := func(name, value, dist string) discovery.Declaration {
		ref, err := discovery.ParseObjectRef(value)
		if err != nil {
			t.Fatal(err)
		}
		return discovery.Declaration{Name: name, Value: value, Ref: ref, Distribution: dist}
	}
	one := decl("probe", "probe_provider:Probe", "probe-provider")
	two := decl("basic", "basic_provider:Basic", "basic-provider")
	_, err := discovery.Resolve(nil, []discovery.Declaration{one, two}, "")
	var ce *discovery.ConflictError
	if !errors.As(err, &ce) {
		t.Fatalf("two installed providers: got %v, want a *discovery.ConflictError", err)
	}
	if ce.Clause() != "EP-CONFLICT" || len(ce.Declarations) != 2 {
		t.Fatalf("conflict names %s with %d declarations", ce.Clause(), len(ce.Declarations))
	}
	for _, want := range []string{"probe", "basic"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("conflict error does not name %s: %v", want, err)
		}
	}
	// One provider is not a conflict.
	if res, err := discovery.Resolve(nil, []discovery.Declaration{one}, ""); err != nil || res.Chosen.Name != "probe" {
		t.Fatalf("one provider: %v %+v", err, res.Chosen)
	}
}

// defaultsYAML visits every callback once.
const defaultsYAML = `name: defaults
replicas: 1
steps:
  - {op: prewarm, agent: agent-1, boxes: 1}
  - {op: claim, session: s1, agent: agent-1, principal: alice}
  - {op: cold_start, session: s2, agent: agent-1, principal: alice}
  - {op: turn, session: s1, attempt: t1, live_for: 60}
  - {op: read_user_actions, session: s1}
  - {op: perform_user_action, session: s1, action: anything}
  - {op: recover, operation: op-1}
  - {op: turn, session: s2, attempt: t2, via: console}
`

// platformShape is what the platform did, without who did it: steps, codes and engine activity.
func platformShape(h *History) []string {
	var out []string
	for _, e := range h.Events {
		switch {
		case e.Code != "":
			out = append(out, e.Op+":"+e.Code)
		case e.Engine != nil:
			out = append(out, e.Op+":engine:"+e.Engine.Session)
		case e.Kind == EventEngine:
			out = append(out, e.Op+":write")
		case e.Delivery != nil:
			out = append(out, e.Op+":deliver:"+e.Delivery.Name)
		case e.Call != nil:
			out = append(out, e.Op+":call:"+string(e.Call.Method))
		}
	}
	return out
}

func TestEP_NONE(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python (skipped under -short)")
	}
	t.Parallel()
	h := play(t, "none", defaultsYAML)
	dumpOnFailure(t, h)
	for _, e := range h.Events {
		if e.Op == "start" {
			t.Errorf("no provider, yet a replica process started: %s", e.Message)
		}
		if e.Call != nil && !strings.HasSuffix(e.Call.Key, "#-") {
			t.Errorf("call %s reached a provider process", e.Call.Key)
		}
		if e.Sandbox != nil || e.Delivery != nil {
			t.Errorf("no provider, yet %s", e.Message)
		}
	}
	if h.Provider != "" || len(h.Requests) != 0 {
		t.Errorf("provider %q, %d double requests", h.Provider, len(h.Requests))
	}
	for _, s := range []string{"s1", "s2"} {
		if len(engineStarts(h, s)) != 1 {
			t.Errorf("session %s was not prepared without callbacks", s)
		}
	}
	if len(writes(h, "t1")) != 1 || len(writes(h, "t2")) != 1 {
		t.Errorf("turns were not written")
	}
	if b := inventory(h, "box-1"); b == nil || b.State != "claimed" {
		t.Errorf("the prewarmed box was not claimed: %+v", b)
	}
	// The platform behaves as with a provider that overrides nothing.
	d := play(t, "defaults", defaultsYAML)
	if got, want := strings.Join(platformShape(h), "\n"), strings.Join(platformShape(d), "\n"); got != want {
		t.Errorf("no provider:\n%s\n\ndefaults provider:\n%s", got, want)
	}
}

func TestEP_DEFAULTS(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python (skipped under -short)")
	}
	t.Parallel()
	h := play(t, "defaults", defaultsYAML)
	dumpOnFailure(t, h)
	want := map[Callback]string{"plan": "RuntimePreparationPlan", "synchronize": "none", "prepare_session": "RuntimeMaterials",
		"prepare_turn": "RuntimeMaterials", "read_user_actions": "SessionUserActionState", "recover": "bool"}
	seen := map[Callback]int{}
	for _, c := range h.Calls() {
		seen[c.Method]++
		if strings.HasSuffix(c.Key, "#-") {
			t.Errorf("%s did not run in the provider process", c.Method)
		}
		if c.Outcome != OutcomeReturned || c.Result == nil || c.Result.Type != want[c.Method] {
			t.Errorf("%s: outcome %s result %+v, want the default %s", c.Method, c.Outcome, c.Result, want[c.Method])
			continue
		}
		switch c.Method {
		case "plan":
			if c.Result.SessionBound {
				t.Errorf("default plan is session-bound")
			}
		case "prepare_session", "prepare_turn":
			if len(c.Result.Files) != 0 || len(c.Result.Environment) != 0 {
				t.Errorf("default %s returned material", c.Method)
			}
		case "read_user_actions":
			if !c.Result.Ready {
				t.Errorf("default state is not ready")
			}
		case "recover":
			if c.Result.Value {
				t.Errorf("default recover returned True")
			}
		}
	}
	for m := range want {
		if seen[m] == 0 {
			t.Errorf("%s was never called", m)
		}
	}
	if seen["perform_user_action"] != 0 {
		t.Errorf("perform_user_action was called although the default state offers no action")
	}
	if !hasCode(h, 6, CodeSessionUserActionNotOffered) {
		t.Errorf("perform of an action the default state does not offer: codes %v", codes(h, 6))
	}
	for _, c := range codes(h, 0) {
		if c != CodeSessionUserActionNotOffered {
			t.Errorf("a provider with only defaults met refusal %s", c)
		}
	}
	if len(writes(h, "t1")) != 1 || len(writes(h, "t2")) != 1 {
		t.Errorf("turns of a defaults provider were not written")
	}
}

func TestPLAN_DETACHED(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python (skipped under -short)")
	}
	t.Parallel()
	h := play(t, "probe", lifecycleYAML)
	dumpOnFailure(t, h)
	plans := h.CallsOf("plan")
	if len(plans) < 3 {
		t.Fatalf("%d plan calls", len(plans))
	}
	ids := []string{"s1", "s2", "alice", "bob"}
	var first []byte
	for _, c := range plans {
		if len(c.Args) != 1 || c.Args["config"] == nil {
			t.Fatalf("plan args %v, want only config", c.Args)
		}
		if c.Ctx.Session != "" || c.Ctx.Principal != "" {
			t.Errorf("plan call is about session %q principal %q", c.Ctx.Session, c.Ctx.Principal)
		}
		walkStrings(c.Args["config"], func(k, s string) {
			for _, id := range ids {
				if s == id || k == "session_id" || k == "principal_id" {
					t.Errorf("plan config names a requesting Session: %s=%q", k, s)
				}
			}
		})
		b := mustJSON(t, c.Args)
		if first == nil {
			first = b
		} else if string(b) != string(first) {
			t.Errorf("plan for a claim of s1 and a cold start of s2 got different configs:\n%s\n%s", first, b)
		}
		// What the provider saw: the resolved configuration (no ${...} left), with the same keys.
		var decl struct {
			Keys     []string `json:"keys"`
			Resolved bool     `json:"resolved"`
		}
		if err := json.Unmarshal(c.Result.Declaration, &decl); err != nil {
			t.Fatal(err)
		}
		if !decl.Resolved {
			t.Errorf("plan saw an unresolved configuration")
		}
		if strings.Join(decl.Keys, ",") != "agent,endpoint,packages,secrets,skills" {
			t.Errorf("plan saw keys %v", decl.Keys)
		}
	}
}

func walkStrings(v any, f func(key, s string)) {
	var walk func(k string, v any)
	walk = func(k string, v any) {
		switch t := v.(type) {
		case map[string]any:
			for kk, x := range t {
				f(kk, "")
				walk(kk, x)
			}
		case []any:
			for _, x := range t {
				walk(k, x)
			}
		case string:
			f(k, t)
		}
	}
	walk("", v)
}

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
	syncGen := ctxArg(h.CallsOf("synchronize")[0])["runtime_generation"]
	if ctxArg(ps[0])["runtime_generation"] == syncGen {
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

func TestSYNC_WHEN(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python (skipped under -short)")
	}
	t.Parallel()
	h := play(t, "probe", lifecycleYAML)
	dumpOnFailure(t, h)
	syncs := h.CallsOf("synchronize")
	if len(syncs) != 2 {
		t.Fatalf("%d synchronize calls, want one per prepared box (2)", len(syncs))
	}
	for _, c := range syncs {
		if h.EventOf(c).Step != 1 {
			t.Errorf("synchronize ran in step %d", h.EventOf(c).Step)
		}
	}
	if n := len(stepEvents(h, 2)); n != 2 {
		t.Errorf("prewarm without capacity did something: %d events", n)
	}
	// Each box: caches exist (the provider read them), then synchronize, then publication.
	for i, c := range syncs {
		box := c.Ctx.Box
		var read, published int
		for _, e := range h.Events {
			if e.Sandbox != nil && e.Sandbox.Call == c.Key && e.Sandbox.Op == "read_file" {
				if e.Sandbox.Error != "" {
					t.Errorf("%s: the package checkout did not exist: %s", box, e.Message)
				}
				read = e.Seq
			}
			if e.Data != nil && e.Data["box"] == box && strings.Contains(e.Message, "published") {
				published = e.Seq
			}
		}
		if read == 0 || published == 0 || !(read < seqOf(h, c) && seqOf(h, c) < published) {
			t.Errorf("box %d: cache read at %d, synchronize at %d, published at %d", i+1, read, seqOf(h, c), published)
		}
	}
	// Claim, cold start, reattachment, sandbox replacement, input refresh and turns never synchronize.
	for step := 3; step <= 11; step++ {
		if n := len(callsIn(h, step, "synchronize")); n != 0 {
			t.Errorf("step %d called synchronize", step)
		}
	}
}

func TestSYNC_CONTEXT(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python (skipped under -short)")
	}
	t.Parallel()
	h := play(t, "probe", casYAML)
	dumpOnFailure(t, h)
	var echoes []map[string]any
	for _, r := range h.Requests {
		if r.Method == "PUT" && strings.HasPrefix(r.Path, "/v1/records/sync/") {
			var body struct {
				Value map[string]any `json:"value"`
			}
			if err := json.Unmarshal(r.Body, &body); err != nil {
				t.Fatal(err)
			}
			echoes = append(echoes, body.Value)
			if r.Callback != "synchronize" || r.Operation != body.Value["operation_id"] {
				t.Errorf("echo attributed to %s, operation header %q", r.Callback, r.Operation)
			}
		}
	}
	syncs := h.CallsOf("synchronize")
	if len(echoes) != 3 || len(syncs) != 3 {
		t.Fatalf("%d echoes, %d synchronize calls", len(echoes), len(syncs))
	}
	seenOps := map[any]bool{}
	for i, e := range echoes {
		args := ctxArg(syncs[i])
		op := args["operation"].(map[string]any)
		for k, want := range map[string]any{
			"agent_id": "agent-1", "operation_id": op["operation_id"], "deadline_set": true, "creator_user_id": "alice",
			"preparation_id": args["preparation_id"], "runtime_generation": args["runtime_generation"],
			"sandbox_id": syncs[i].Ctx.SandboxID, "skills_path": SkillsDir,
		} {
			if e[k] != want {
				t.Errorf("sync %d: %s = %v, want %v", i+1, k, e[k], want)
			}
		}
		if seenOps[op["operation_id"]] {
			t.Errorf("operation id %v reused", op["operation_id"])
		}
		seenOps[op["operation_id"]] = true
		if strings.Join(toStrings(e["config_keys"]), ",") != "agent,packages,secrets,skills" {
			t.Errorf("config keys %v", e["config_keys"])
		}
		pk := e["packages"].([]any)
		if len(pk) != 1 || pk[0].(map[string]any)["path"] != PluginCacheDir+"/tools" || pk[0].(map[string]any)["name"] != "tools" {
			t.Errorf("packages %v", pk)
		}
		if strings.Join(toStrings(e["skills"]), ",") != "summarize" {
			t.Errorf("skills %v", e["skills"])
		}
	}
	// Version and pool lifetime follow the config change; the generation changes with it.
	if echoes[1]["config_version"] != float64(1) || echoes[2]["config_version"] != float64(2) {
		t.Errorf("config versions %v, %v", echoes[1]["config_version"], echoes[2]["config_version"])
	}
	if echoes[1]["preparation_id"] == echoes[2]["preparation_id"] || echoes[1]["runtime_generation"] == echoes[2]["runtime_generation"] {
		t.Errorf("pool lifetime or generation did not change with the version")
	}
}

func toStrings(v any) []string {
	var out []string
	list, _ := v.([]any)
	for _, x := range list {
		s, _ := x.(string)
		out = append(out, s)
	}
	return out
}

func TestSYNC_CAS(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python (skipped under -short)")
	}
	t.Parallel()
	h := play(t, "probe", casYAML)
	dumpOnFailure(t, h)
	if !hasCode(h, 1, "PREPARATION_SUPERSEDED") {
		t.Fatalf("superseded synchronize was not refused: %v", codes(h, 1))
	}
	if b := inventory(h, "box-1"); b == nil || b.State != "discarded" {
		t.Errorf("superseded box: %+v", b)
	}
	for _, e := range stepEvents(h, 1) {
		if strings.Contains(e.Message, "published") {
			t.Errorf("superseded result published: %s", e.Message)
		}
	}
	// The refusal comes after synchronize returned, after the concurrent update.
	var update, refused int
	for _, e := range stepEvents(h, 1) {
		if strings.Contains(e.Message, "another replica updated") {
			update = e.Seq
		}
		if e.Code == "PREPARATION_SUPERSEDED" {
			refused = e.Seq
		}
	}
	if s := callsIn(h, 1, "synchronize"); len(s) != 1 || !(update < seqOf(h, s[0]) && seqOf(h, s[0]) < refused) {
		t.Errorf("order: update %d, synchronize %v, refusal %d", update, s, refused)
	}
	// The next prewarm, with nothing changing under it, publishes.
	if b := inventory(h, "box-2"); b == nil || b.State == "discarded" {
		t.Errorf("next prewarm: %+v", b)
	}
	if len(codes(h, 2)) != 0 {
		t.Errorf("unchanged prewarm refused: %v", codes(h, 2))
	}
}

// unresolvedYAML: synchronize ends by exception, timeout, cancellation and host loss.
const unresolvedYAML = `name: unresolved
replicas: 1
agents:
  - {id: agent-raise}
  - {id: agent-sleep}
  - {id: agent-1}
deadlines: {operation_lease: 100}
steps:
  - {op: prewarm, agent: agent-raise, boxes: 1}
  - {op: prewarm, agent: agent-sleep, boxes: 1, fault: {kind: timeout, after: 0.2}}
  - {op: prewarm, agent: agent-sleep, boxes: 1, fault: {kind: cancel, after: 0.2}}
  - op: prewarm
    agent: agent-1
    boxes: 1
    fault: {kind: host_loss}
    double: [{kind: hold, method: PUT, path: /v1/records/, times: 1}]
  - {op: recover, operation: op-1}
  - {op: release}
  - {op: advance, seconds: 200}
  - {op: recover, operation: op-2}
  - {op: prewarm, agent: agent-1, boxes: 1}
`

func TestSYNC_UNRESOLVED(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python (skipped under -short)")
	}
	t.Parallel()
	h := play(t, "probe", unresolvedYAML)
	dumpOnFailure(t, h)
	outcomes := []Outcome{OutcomeRaised, OutcomeCancelled, OutcomeCancelled, OutcomeHostLoss}
	opIDs := map[string]string{}
	for i, want := range outcomes {
		step := i + 1
		s := callsIn(h, step, "synchronize")
		if len(s) != 1 || s[0].Outcome != want {
			t.Fatalf("step %d: synchronize %+v, want outcome %s", step, s, want)
		}
		if !hasCode(h, step, "OPERATION_UNRESOLVED") {
			t.Errorf("step %d (%s): no unresolved operation: %v", step, want, codes(h, step))
		}
		opIDs[s[0].Ctx.Operation] = ctxArg(s[0])["operation"].(map[string]any)["operation_id"].(string)
		if b := inventory(h, s[0].Ctx.Box); b == nil || b.State == "waiting" || b.State == "claimed" {
			t.Errorf("step %d: box of the unresolved operation %+v", step, b)
		}
	}
	// Only recover runs for an unresolved operation: synchronize never again with its id.
	for _, c := range h.CallsOf("synchronize")[4:] {
		for _, id := range opIDs {
			if ctxArg(c)["operation"].(map[string]any)["operation_id"] == id {
				t.Errorf("synchronize called again for unresolved operation %s", id)
			}
		}
	}
	rec := callsIn(h, 5, "recover")
	if len(rec) != 1 || rec[0].Args["operation"].(map[string]any)["operation_id"] != opIDs["op-1"] {
		t.Fatalf("recover of op-1: %+v", rec)
	}
	if len(h.RequestsOf(rec[0].Key)) != 1 || h.RequestsOf(rec[0].Key)[0].Path != "/v1/fences" {
		t.Errorf("recover did not fence")
	}
	// Past the deadline the operations expire; recover is not called any more.
	if !hasCode(h, 8, "OPERATION_EXPIRED") || len(callsIn(h, 8, "recover")) != 0 {
		t.Errorf("recover after the deadline: codes %v", codes(h, 8))
	}
	expired := 0
	for _, e := range stepEvents(h, 7) {
		if strings.Contains(e.Message, "passed its deadline unresolved") {
			expired++
		}
	}
	if expired != 3 {
		t.Errorf("%d operations expired, want 3 (op-2, op-3, op-4)", expired)
	}
	for _, b := range h.Inventory[:4] {
		if b.State != "discarded" {
			t.Errorf("box %s of an unresolved operation ended %s", b.ID, b.State)
		}
	}
	if b := inventory(h, "box-5"); b == nil || b.State != "waiting" {
		t.Errorf("a new operation after expiry: %+v", b)
	}
}

func TestRECOVER_DEFAULT(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python (skipped under -short)")
	}
	t.Parallel()
	h := play(t, "slow-sync", `name: recover-default
replicas: 1
steps:
  - {op: prewarm, agent: agent-1, boxes: 1, fault: {kind: timeout, after: 0.2}}
  - {op: recover, operation: op-1}
  - {op: recover, operation: op-1}
`)
	dumpOnFailure(t, h)
	if !hasCode(h, 1, "OPERATION_UNRESOLVED") {
		t.Fatalf("no unresolved operation: %v", codes(h, 1))
	}
	recs := h.CallsOf("recover")
	if len(recs) != 2 {
		t.Fatalf("%d recover calls", len(recs))
	}
	for _, c := range recs {
		if c.Outcome != OutcomeReturned || c.Result == nil || c.Result.Type != "bool" || c.Result.Value {
			t.Errorf("default recover: %s %+v, want False", c.Outcome, c.Result)
		}
	}
	for _, step := range []int{2, 3} {
		found := false
		for _, e := range stepEvents(h, step) {
			if e.Data != nil && e.Data["recovered"] == false {
				found = true
			}
		}
		if !found {
			t.Errorf("step %d: the platform did not keep the operation unresolved", step)
		}
	}
	if b := inventory(h, "box-1"); b == nil || b.State != "unresolved" {
		t.Errorf("box after recover=False: %+v", b)
	}
}

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
		if len(ps) != 1 || ps[0].Ctx.Trigger != trig || ctxArg(ps[0])["trigger"] != trig {
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
	// Each Session gets its own workload identity token, planted as a secret.
	n := 0
	for _, s := range h.Secrets {
		if strings.HasPrefix(s.Origin, "workload identity token of session") {
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

func TestTURN_WHEN(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python (skipped under -short)")
	}
	t.Parallel()
	h := play(t, "probe", lifecycleYAML)
	dumpOnFailure(t, h)
	for _, step := range []int{5, 6, 10, 11} {
		ev := stepEvents(h, step)
		guard, call, write := -1, -1, -1
		for i, e := range ev {
			switch {
			case strings.Contains(e.Message, "reloaded, slot confirmed, per-Session guard claimed"):
				guard = i
			case e.Call != nil && e.Call.Method == "prepare_turn":
				call = i
			case e.Kind == EventEngine:
				write = i
			}
		}
		if !(guard >= 0 && guard < call && call < write) {
			t.Errorf("step %d: guard %d, prepare_turn %d, write %d", step, guard, call, write)
			continue
		}
		for _, e := range ev[call+1 : write] {
			if e.Delivery == nil {
				t.Errorf("step %d: %q between prepare_turn and the write", step, e.Message)
			}
		}
	}
	// The retry prepares again, with the same attempt, and does not write the input twice.
	r := callsIn(h, 11, "prepare_turn")
	if len(r) != 1 || ctxArg(r[0])["dispatch_attempt_id"] != "t2" || len(writes(h, "t2")) != 1 {
		t.Errorf("retry: %+v, %d writes", r, len(writes(h, "t2")))
	}
	if n := len(h.CallsOf("prepare_turn")); n != 4 {
		t.Errorf("%d prepare_turn calls for 4 engine writes", n)
	}
}

const deadlineYAML = `name: turn-deadline
replicas: 1
deadlines: {turn: 1}
steps:
  - {op: cold_start, session: s1, agent: agent-1, principal: alice}
  - {op: turn, session: s1, attempt: raise1}
  - {op: turn, session: s1, attempt: sleep1}
  - {op: turn, session: s1, attempt: selfcancel1}
  - {op: turn, session: s1, attempt: sleep2, fault: {kind: cancel, after: 0.1}}
  - {op: turn, session: s1, attempt: ok1}
`

func TestTURN_DEADLINE(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python (skipped under -short)")
	}
	t.Parallel()
	h := play(t, "probe", deadlineYAML)
	dumpOnFailure(t, h)
	for step, attempt := range map[int]string{2: "raise1", 3: "sleep1", 4: "selfcancel1", 5: "sleep2"} {
		c := callsIn(h, step, "prepare_turn")
		if len(c) != 1 || c[0].Outcome == OutcomeReturned {
			t.Errorf("step %d: %+v", step, c)
		}
		if !hasCode(h, step, CodeTurnPreparationFailed) {
			t.Errorf("step %d (%s): codes %v", step, attempt, codes(h, step))
		}
		if len(writes(h, attempt)) != 0 {
			t.Errorf("input of %s reached the engine", attempt)
		}
		for _, e := range stepEvents(h, step) {
			if e.Delivery != nil {
				t.Errorf("step %d delivered material of a refused write", step)
			}
		}
	}
	if c := callsIn(h, 3, "prepare_turn"); len(c) == 1 && (c[0].Outcome != OutcomeCancelled || !c[0].CancelSent) {
		t.Errorf("deadline: outcome %s cancel sent %v", c[0].Outcome, c[0].CancelSent)
	}
	if len(writes(h, "ok1")) != 1 {
		t.Errorf("the session does not recover from refused turns")
	}
	noLeak(t, h, "probe-internal-detail")
}

const validityYAML = `name: turn-validity
replicas: 1
steps:
  - {op: cold_start, session: s1, agent: agent-1, principal: alice}
  - {op: turn, session: s1, attempt: valid1, live_for: 1200}
  - {op: turn, session: s1, attempt: refreshfail1, live_for: 600}
  - {op: turn, session: s1, attempt: t3}
  - {op: cold_start, session: s2, agent: agent-1, principal: alice}
  - {op: turn, session: s2, attempt: tiny1, live_for: 200}
`

func TestTURN_VALIDITY(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python (skipped under -short)")
	}
	t.Parallel()
	h := play(t, "probe", validityYAML)
	dumpOnFailure(t, h)
	calls := callsIn(h, 2, "prepare_turn")
	if len(calls) < 2 {
		t.Fatalf("%d prepare_turn calls for a write live for 1200 s with 300 s validity", len(calls))
	}
	start := h.EventOf(calls[0]).At
	var end float64
	for _, e := range stepEvents(h, 2) {
		if strings.Contains(e.Message, "write complete") {
			end = e.At
		}
	}
	if end-start != 1200 {
		t.Fatalf("write live from %g to %g on the host clock, want 1200 s", start, end)
	}
	prev := start
	for i, c := range calls {
		if ctxArg(c)["dispatch_attempt_id"] != "valid1" || (i > 0) != c.Ctx.Refresh || ctxArg(c)["refresh"] != (i > 0) {
			t.Errorf("call %d: attempt %v refresh %v", i, ctxArg(c)["dispatch_attempt_id"], c.Ctx.Refresh)
		}
		at := h.EventOf(c).At
		if i > 0 && at >= prev+300 {
			t.Errorf("refresh %d at %g: validity from %g lapsed first", i, at, prev)
		}
		prev = at
	}
	if prev+300 < end {
		t.Errorf("validity lapsed at %g while the write was live until %g", prev+300, end)
	}
	if len(writes(h, "valid1")) != 1 {
		t.Errorf("refreshes rewrote the input")
	}
	// A failed refresh quarantines the guard; the next turn is refused without calling the provider.
	if !hasCode(h, 3, "TURN_GUARD_QUARANTINED") {
		t.Errorf("failed refresh: %v", codes(h, 3))
	}
	if !hasCode(h, 4, CodeTurnPreparationFailed) || len(callsIn(h, 4, "prepare_turn")) != 0 || len(writes(h, "t3")) != 0 {
		t.Errorf("turn on a quarantined guard: %v", codes(h, 4))
	}
	// A validity of 1 s over a 200 s write needs more refreshes than the platform makes: the write is cut
	// when the last validity lapses, never left live on lapsed material.
	tiny := callsIn(h, 6, "prepare_turn")
	if len(tiny) != MaxRefreshes+1 {
		t.Fatalf("%d prepare_turn calls, want the first and %d refreshes", len(tiny), MaxRefreshes)
	}
	prev = h.EventOf(tiny[0]).At
	for _, c := range tiny[1:] {
		if at := h.EventOf(c).At; at >= prev+1 {
			t.Fatalf("refresh at %g after validity lapsed at %g", at, prev+1)
		} else {
			prev = at
		}
	}
	var cut *Event
	for _, e := range stepEvents(h, 6) {
		if strings.Contains(e.Message, "write complete") {
			t.Errorf("a write whose validity lapsed was reported complete")
		}
		if strings.Contains(e.Message, "cut after") {
			cut = e
		}
	}
	if cut == nil || cut.At != prev+1 {
		t.Errorf("cut %v, want an event when validity lapsed at %g", cut, prev+1)
	}
}

func TestTURN_BACKEND(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python (skipped under -short)")
	}
	t.Parallel()
	for _, backend := range []string{"{profile_exclusive: false, owns_sandbox: true}", "{profile_exclusive: true, owns_sandbox: false}"} {
		h := play(t, "probe", `name: backend
replicas: 1
backend: `+backend+`
steps:
  - {op: cold_start, session: s1, agent: agent-1, principal: alice}
  - {op: turn, session: s1, attempt: t1}
`)
		dumpOnFailure(t, h)
		if !hasCode(h, 2, CodeTurnPreparationFailed) || len(callsIn(h, 2, "prepare_turn")) != 0 || len(writes(h, "t1")) != 0 {
			t.Errorf("backend %s: turn prepared anyway (%v)", backend, codes(h, 2))
		}
	}
	h := play(t, "probe", lifecycleYAML)
	if len(writes(h, "t2")) != 1 {
		t.Errorf("a profile-exclusive backend that owns its sandboxes cannot prepare turns")
	}
}

const uaYAML = `name: user-action
replicas: 1
principals:
  alice: {consent: granted}
  carol: {consent: pending}
steps:
  - {op: cold_start, session: s1, agent: agent-1, principal: alice}
  - {op: cold_start, session: s2, agent: agent-1, principal: carol}
  - {op: turn, session: s2, attempt: ua1, images: 2}
  - {op: turn, session: s2, attempt: badua1}
  - {op: turn, session: s1, attempt: raise1}
  - {op: cold_start, session: s3, agent: agent-1, principal: ua-at-start}
  - {op: advance, seconds: 60}
  - {op: turn, session: s1, attempt: t1}
  - {op: set_consent, principal: carol, consent: granted}
  - {op: retry, session: s2, attempt: ua1}
`

func TestUA_RAISE(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python (skipped under -short)")
	}
	t.Parallel()
	h := play(t, "probe", uaYAML)
	dumpOnFailure(t, h)
	for _, step := range []int{3, 6} {
		var ev *Event
		for _, e := range stepEvents(h, step) {
			if e.Code == CodeTurnUserActionRequired {
				ev = e
			}
		}
		if ev == nil {
			t.Errorf("step %d: no user action: %v", step, codes(h, step))
			continue
		}
		d := ev.Data
		if d["http_status"] != 409 || d["retryable"] != false || d["status"] != "pending" || d["message"] != "Complete consent first." || d["url"] != "https://identity.example/consent" {
			t.Errorf("step %d payload %v", step, d)
		}
	}
	// An invalid user action and any other exception stay generic.
	for _, step := range []int{4, 5} {
		if !hasCode(h, step, CodeTurnPreparationFailed) || hasCode(h, step, CodeTurnUserActionRequired) {
			t.Errorf("step %d: %v", step, codes(h, step))
		}
	}
	noLeak(t, h, "probe-internal-detail")
	noLeak(t, h, "Go elsewhere")
}

func TestUA_NO_RESEND(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python (skipped under -short)")
	}
	t.Parallel()
	h := play(t, "probe", uaYAML)
	dumpOnFailure(t, h)
	kept := false
	for _, e := range stepEvents(h, 3) {
		if e.Data != nil && e.Data["kept"] == "ua1" && e.Data["images"] == 2 {
			kept = true
		}
	}
	if !kept {
		t.Errorf("the refused input and its images were not kept")
	}
	// Nothing is resent: ua1 is prepared again only by the explicit retry, and written once then.
	var steps []int
	for _, c := range h.CallsOf("prepare_turn") {
		if c.Ctx.Attempt == "ua1" {
			steps = append(steps, h.EventOf(c).Step)
		}
	}
	if len(steps) != 2 || steps[0] != 3 || steps[1] != 10 {
		t.Errorf("ua1 prepared in steps %v, want 3 and 10 (the explicit retry)", steps)
	}
	w := writes(h, "ua1")
	if len(w) != 1 || w[0].Step != 10 {
		t.Errorf("ua1 written %d times", len(w))
	}
}

const uaEndpointsYAML = `name: user-action-endpoints
replicas: 2
steps:
  - {op: cold_start, session: s1, agent: agent-1, principal: needs-action, replica: r1}    # 1
  - {op: cold_start, session: s2, agent: agent-1, principal: unknown, replica: r1}         # 2
  - {op: cold_start, session: s3, agent: agent-1, principal: uaraise, replica: r1}         # 3
  - {op: cold_start, session: s4, agent: agent-1, principal: alice, replica: r1}           # 4
  - {op: read_user_actions, session: s1, scope: none}                                      # 5
  - {op: perform_user_action, session: s1, action: check, scope: read}                     # 6
  - {op: read_user_actions, session: s1, replica: r2}                                      # 7
  - {op: turn, session: s1, attempt: c1, via: console}                                     # 8
  - {op: turn, session: s1, attempt: c2}                                                   # 9
  - {op: perform_user_action, session: s1, action: nope}                                   # 10
  - {op: perform_user_action, session: s1, action: check, replica: r1}                     # 11
  - {op: read_user_actions, session: s2}                                                   # 12
  - {op: turn, session: s2, attempt: c3, via: console}                                     # 13
  - {op: read_user_actions, session: s3}                                                   # 14
  - {op: turn, session: s3, attempt: c4, via: console}                                     # 15
  - {op: perform_user_action, session: s3, action: check}                                  # 16
  - {op: read_user_actions, session: s4}                                                   # 17
  - {op: turn, session: s4, attempt: c5, via: console}                                     # 18
`

func TestUA_ENDPOINTS(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python (skipped under -short)")
	}
	t.Parallel()
	h := play(t, "probe", uaEndpointsYAML)
	dumpOnFailure(t, h)
	noCalls := func(step int) {
		t.Helper()
		for _, e := range stepEvents(h, step) {
			if e.Call != nil {
				t.Errorf("step %d called %s", step, e.Call.Method)
			}
		}
	}
	// Scopes: GET needs read, POST needs write.
	for _, step := range []int{5, 6} {
		if !hasCode(h, step, CodeForbidden) {
			t.Errorf("step %d: %v", step, codes(h, step))
		}
		noCalls(step)
	}
	// GET calls read_user_actions with the persisted Session, owner and Agent.
	r := callsIn(h, 7, "read_user_actions")
	if len(r) != 1 || r[0].Replica != "r2" {
		t.Fatalf("GET: %+v", r)
	}
	if c := ctxArg(r[0]); c["session_id"] != "s1" || c["owner_id"] != "needs-action" || c["agent_id"] != "agent-1" {
		t.Errorf("GET context %v", c)
	}
	blocked := func(step int) any {
		for _, e := range stepEvents(h, step) {
			if e.Data != nil {
				if b, ok := e.Data["blocked"]; ok {
					return b
				}
			}
		}
		return nil
	}
	if blocked(7) != true || blocked(12) != true || blocked(17) != false {
		t.Errorf("console blocked after pending %v, unknown %v, ready %v", blocked(7), blocked(12), blocked(17))
	}
	// Console sends are blocked while pending or unknown; API sends still go through prepare_turn.
	for _, step := range []int{8, 13, 15} {
		if !hasCode(h, step, "CONSOLE_SEND_BLOCKED") {
			t.Errorf("step %d: console send not blocked: %v", step, codes(h, step))
		}
		noCalls(step)
	}
	if c := callsIn(h, 9, "prepare_turn"); len(c) != 1 || !c[0].Ctx.PriorStateRead || len(writes(h, "c2")) != 1 {
		t.Errorf("API send after a state read: %+v", c)
	}
	if len(writes(h, "c5")) != 1 {
		t.Errorf("console send on a ready Session was not written")
	}
	// POST checks the operation is offered, then calls perform_user_action with it.
	if !hasCode(h, 10, CodeSessionUserActionNotOffered) || len(callsIn(h, 10, "perform_user_action")) != 0 {
		t.Errorf("not offered: %v", codes(h, 10))
	}
	ev := stepEvents(h, 11)
	var methods []string
	for _, e := range ev {
		if e.Call != nil {
			methods = append(methods, string(e.Call.Method))
		}
	}
	if strings.Join(methods, ",") != "read_user_actions,perform_user_action" {
		t.Errorf("POST calls %v", methods)
	}
	if p := callsIn(h, 11, "perform_user_action"); len(p) == 1 && (p[0].Args["action_id"] != "check" || ctxArg(p[0])["owner_id"] != "needs-action") {
		t.Errorf("perform args %v", p[0].Args)
	}
	// Provider errors fail the request, never grant readiness.
	for _, step := range []int{14, 16} {
		if !hasCode(h, step, CodeSessionUserActionFailed) {
			t.Errorf("step %d: %v", step, codes(h, step))
		}
		for _, e := range stepEvents(h, step) {
			if e.Data != nil && e.Data["ready"] == true {
				t.Errorf("step %d granted readiness", step)
			}
		}
	}
	if len(callsIn(h, 16, "perform_user_action")) != 0 {
		t.Errorf("perform called although the state could not be read")
	}
	noLeak(t, h, "probe-internal-detail")
}

func TestGEN_DELIVERY_ACK(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python (skipped under -short)")
	}
	t.Parallel()
	h := play(t, "probe", lifecycleYAML)
	dumpOnFailure(t, h)
	// Platform deliveries of a call are complete before the step goes on (engine activation or write).
	for _, e := range h.Events {
		if e.Call == nil || e.Call.Method != "prepare_session" && e.Call.Method != "prepare_turn" {
			continue
		}
		ds := deliveries(h, e.Call.Key)
		next := -1
		for _, x := range h.Events[e.Seq:] {
			if x.Kind == EventEngine || x.Step != e.Step {
				next = x.Seq
				break
			}
		}
		for _, x := range h.Events {
			if x.Delivery != nil && x.Delivery.From == e.Call.Key && (x.Seq < e.Seq || next >= 0 && x.Seq > next) {
				t.Errorf("delivery %s of %s at event %d, outside [%d, %d]", x.Delivery.Name, e.Call.Key, x.Seq, e.Seq, next)
			}
		}
		if e.Call.Result != nil && len(ds) != len(e.Call.Result.Files) {
			t.Errorf("%s returned %d files, %d delivered", e.Call.Key, len(e.Call.Result.Files), len(ds))
		}
	}
	// A provider's acknowledged sandbox write is complete when write_file returns: recorded before the
	// callback returned, and readable on another replica in the next turn.
	in, re := callsIn(h, 5, "prepare_turn")[0], callsIn(h, 6, "prepare_turn")[0]
	var wrote, read *Event
	for _, e := range h.Events {
		if e.Sandbox != nil && e.Sandbox.Op == "write_file" && e.Sandbox.Call == in.Key {
			wrote = e
		}
		if e.Sandbox != nil && e.Sandbox.Op == "read_file" && e.Sandbox.Call == re.Key {
			read = e
		}
	}
	if wrote == nil || read == nil {
		t.Fatalf("write %v read %v", wrote, read)
	}
	if wrote.Seq > seqOf(h, in) || wrote.Sandbox.Error != "" || read.Sandbox.Error != "" || read.Sandbox.Size != wrote.Sandbox.Size || re.Replica == in.Replica {
		t.Errorf("write %+v (call at %d), read %+v", wrote.Sandbox, seqOf(h, in), read.Sandbox)
	}
}
