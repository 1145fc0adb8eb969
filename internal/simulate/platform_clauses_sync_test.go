package simulate

import (
	"encoding/json"
	"strings"
	"testing"
)

// Platform clause tests, continued (platform_clauses_test.go has the shared scenarios and the rule: one
// test per `platform` clause of spec/clauses.md, named after the clause).

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
		opID := args.Operation.OperationID
		for k, want := range map[string]any{
			"agent_id": "agent-1", "operation_id": opID, "deadline_set": true, "creator_user_id": "alice",
			"preparation_id": args.PreparationID, "runtime_generation": args.RuntimeGeneration,
			"sandbox_id": syncs[i].Ctx.SandboxID, "skills_path": SkillsDir,
		} {
			if e[k] != want {
				t.Errorf("sync %d: %s = %v, want %v", i+1, k, e[k], want)
			}
		}
		if seenOps[opID] {
			t.Errorf("operation id %v reused", opID)
		}
		seenOps[opID] = true
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
		opIDs[s[0].Ctx.Operation] = opArg(s[0]).OperationID
		if b := inventory(h, s[0].Ctx.Box); b == nil || b.State == "waiting" || b.State == "claimed" {
			t.Errorf("step %d: box of the unresolved operation %+v", step, b)
		}
	}
	// Only recover runs for an unresolved operation: synchronize never again with its id.
	for _, c := range h.CallsOf("synchronize")[4:] {
		for _, id := range opIDs {
			if opArg(c).OperationID == id {
				t.Errorf("synchronize called again for unresolved operation %s", id)
			}
		}
	}
	rec := callsIn(h, 5, "recover")
	if len(rec) != 1 || opArg(rec[0]).OperationID != opIDs["op-1"] {
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
		if c.Outcome != OutcomeReturned || c.Result == nil || c.Result.Type != KindBool || c.Result.Value {
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
