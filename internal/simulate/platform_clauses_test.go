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
	want := map[Callback]ResultKind{CallPlan: KindPlan, CallSynchronize: KindNone, CallPrepareSession: KindMaterials,
		CallPrepareTurn: KindMaterials, CallReadUserActions: KindUserActionState, CallRecover: KindBool}
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
