package conformance

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/astrabox-dev/astrabox/internal/harness"
	"github.com/astrabox-dev/astrabox/internal/secrets"
	"github.com/astrabox-dev/astrabox/internal/simulate"
)

// syncHist assembles a small synthetic history for decision tests.
type syncHist struct{ h *simulate.History }

func newSyncHist(name string) *syncHist {
	return &syncHist{h: &simulate.History{Scenario: name}}
}

func (b *syncHist) call(c *simulate.CallRecord) *simulate.CallRecord {
	b.h.Events = append(b.h.Events, &simulate.Event{Seq: len(b.h.Events) + 1, Step: len(b.h.Events) + 1, Kind: simulate.EventCall, Replica: c.Replica, Call: c})
	return c
}

func (b *syncHist) req(r simulate.Request) {
	r = classified(r)
	r.Seq = int64(len(b.h.Requests) + 1)
	b.h.Requests = append(b.h.Requests, r)
}

func syncCallRec(key, agent, label, opID string, version int, mark int64) *simulate.CallRecord {
	return &simulate.CallRecord{
		Key: key, Replica: strings.Split(key, "#")[0], Method: "synchronize", Outcome: simulate.OutcomeReturned,
		Result: &harness.Result{Type: simulate.KindNone}, ApplyMark: mark,
		Ctx: simulate.CallContext{Agent: agent, Operation: label, Version: version, SandboxID: "sb-" + label},
		Args: map[string]any{"context": map[string]any{
			"operation":          map[string]any{"agent_id": agent, "operation_id": opID},
			"config_version":     version,
			"preparation_id":     "prep-0000000" + string(rune('0'+version)),
			"runtime_generation": "gen-aaaaaaaaaaa" + string(rune('0'+version)),
			"sandbox":            map[string]any{"sandbox_id": "sb-" + label},
			"config":             map[string]any{"agent": map[string]any{"model": "m"}},
		}},
	}
}

func recoverCallRec(key, label, opID string, answer *bool, mark int64) *simulate.CallRecord {
	c := &simulate.CallRecord{Key: key, Replica: strings.Split(key, "#")[0], Method: "recover", ApplyMark: mark,
		Ctx:  simulate.CallContext{Agent: "agent-1", Operation: label},
		Args: map[string]any{"operation": map[string]any{"agent_id": "agent-1", "operation_id": opID}}}
	if answer == nil {
		c.Outcome = simulate.OutcomeRaised
		c.Error = &harness.PyError{Type: "RuntimeError"}
	} else {
		c.Outcome = simulate.OutcomeReturned
		c.Result = &harness.Result{Type: simulate.KindBool, Value: *answer}
	}
	return c
}

func syncEvOf(hs ...*syncHist) *Evidence {
	ev := &Evidence{Secrets: &secrets.Set{}}
	for _, b := range hs {
		ev.Histories = append(ev.Histories, b.h)
	}
	return ev
}

func syncBool(v bool) *bool { return &v }

func TestVersionedPair(t *testing.T) {
	cases := []struct {
		a    string
		va   int
		b    string
		vb   int
		want bool
	}{
		{"agents/agent-1-v1", 1, "agents/agent-1-v2", 2, true}, // agent id holds the version's digit too
		{"agents/agent-1/v01", 1, "agents/agent-1/v02", 2, true},
		{"agents/agent-1", 1, "agents/agent-1", 2, false},
		{"agents/agent-1", 1, "agents/agent-2", 2, true}, // indistinguishable from a version suffix
		{"agents/a/7", 1, "agents/a/8", 2, false},
		{"agents/a-v1", 1, "agents/a-v1/extra", 2, false},
		{"agents/a-v1", 1, "agents/a-v1", 1, false},
	}
	for _, c := range cases {
		if got := versionedPair(c.a, c.va, c.b, c.vb); got != c.want {
			t.Errorf("versionedPair(%q,%d,%q,%d) = %v, want %v", c.a, c.va, c.b, c.vb, got, c.want)
		}
	}
}

func TestContainsTokenAndRecordKey(t *testing.T) {
	if !containsToken("agents/sb-1/x", "sb-1") || containsToken("agents/sb-10/x", "sb-1") || containsToken("xsb-1", "sb-1") {
		t.Error("containsToken must match whole tokens only")
	}
	if got := resourceKey(classified(simulate.Request{Method: "PUT", Path: "/v1/records/agents%2Fagent-1"})); got != "agents/agent-1" {
		t.Errorf("the record key decoded to %q", got)
	}
	if resourceKey(classified(simulate.Request{Method: "POST", Path: "/v1/fences"})) != "" {
		t.Error("a fence path is no record key")
	}
}

func TestImageDir(t *testing.T) {
	for p, want := range map[string]bool{
		"/home/workload/bin/claude":         true,
		"/home/workload/.local/bin/x":       true,
		"/usr/local/bin/claude":             true,
		"/etc/profile.d/x.sh":               true,
		"/home/workload/.config/app.json":   false,
		"/home/workload/bin/sub/dir/file":   false,
		"/workspace/bin/tool":               false,
		"/home/workload/../workload/bin/cl": true,
	} {
		if got := imageDir(p) != ""; got != want {
			t.Errorf("imageDir(%q) found=%v, want %v", p, got, want)
		}
	}
}

// A write attributed to a call but naming another operation belongs to that other operation.
func TestWritesOfAttribution(t *testing.T) {
	b := newSyncHist("s")
	c1 := b.call(syncCallRec("r1#1", "agent-1", "op-1", "op-aaaa", 1, 0))
	c2 := b.call(syncCallRec("r1#2", "agent-1", "op-2", "op-bbbb", 1, 2))
	b.req(simulate.Request{Call: "r1#2", Method: "PUT", Path: "/v1/records/agents/agent-1", Operation: "op-aaaa", Applied: true, ApplyOrder: 1})
	b.req(simulate.Request{Call: "r1#2", Method: "PUT", Path: "/v1/records/other", Applied: true, ApplyOrder: 2})
	ev := syncEvOf(b)
	cs := ev.calls("synchronize")
	if n := len(writesOf(cs[0])); n != 1 || cs[0].c != c1 {
		t.Fatalf("op-1 should own the write that names it, got %d", n)
	}
	w := writesOf(cs[1])
	if len(w) != 1 || w[0].Path != "/v1/records/other" || cs[1].c != c2 {
		t.Fatalf("op-2 should own only the header-less write, got %+v", w)
	}
	// op-1 returned at mark 0 and its write landed as the first applied one: late.
	if f := decideSyncQuiescent(ev); len(f) != 1 || !strings.Contains(f[0].Message, "r1#1") || f[0].Warning {
		t.Fatalf("expected one SYNC-QUIESCENT failure for r1#1, got %+v", f)
	}
}

func TestSyncIdentityAndSkipUnchanged(t *testing.T) {
	b := newSyncHist("s")
	b.call(syncCallRec("r1#1", "agent-1", "op-1", "op-aaaa", 1, 1))
	b.req(simulate.Request{Call: "r1#1", Method: "PUT", Path: "/v1/records/agents/agent-1", Operation: "op-aaaa", Applied: true, ApplyOrder: 1})
	b.call(syncCallRec("r1#2", "agent-1", "op-2", "op-bbbb", 1, 2))
	b.req(simulate.Request{Call: "r1#2", Method: "GET", Path: "/v1/records/agents/agent-1"})
	b.req(simulate.Request{Call: "r1#2", Method: "POST", Path: "/v1/credentials", Applied: true, ApplyOrder: 2})
	b.call(syncCallRec("r2#1", "agent-1", "op-3", "op-cccc", 2, 3))
	b.req(simulate.Request{Call: "r2#1", Method: "PUT", Path: "/v1/records/agents/agent-1", Operation: "op-cccc", Applied: true, ApplyOrder: 3})
	ev := syncEvOf(b)
	if f := decideSyncIdentity(ev); len(f) != 0 {
		t.Fatalf("one record per Agent is right, got %+v", f)
	}
	if f := decideSyncSkipUnchanged(ev); len(f) != 0 {
		t.Fatalf("a credential request and a changed version are no breach, got %+v", f)
	}
	if f := decideSyncQuiescent(ev); len(f) != 0 {
		t.Fatalf("no late write, got %+v", f)
	}

	// Same inputs written again, and a per-sandbox key.
	b.call(syncCallRec("r2#2", "agent-1", "op-4", "op-dddd", 2, 5))
	b.req(simulate.Request{Call: "r2#2", Method: "PUT", Path: "/v1/records/agents/agent-1", Operation: "op-dddd", Applied: true, ApplyOrder: 4})
	b.req(simulate.Request{Call: "r2#2", Method: "PUT", Path: "/v1/records/boxes/sb-op-4", Operation: "op-dddd", Applied: true, ApplyOrder: 5})
	if f := decideSyncSkipUnchanged(ev); len(f) != 1 || !strings.Contains(f[0].Message, "r2#1") {
		t.Fatalf("expected a SYNC-SKIP-UNCHANGED finding against r2#1, got %+v", f)
	}
	if f := decideSyncIdentity(ev); len(f) != 1 || !strings.Contains(f[0].Message, "sandbox id") {
		t.Fatalf("expected a SYNC-IDENTITY finding for the sandbox key, got %+v", f)
	}
}

func TestSyncSkipUnchangedIgnoresNonQuiescentBaseline(t *testing.T) {
	b := newSyncHist("s")
	b.call(syncCallRec("r1#1", "agent-1", "op-1", "op-aaaa", 1, 0)) // returned before its write landed
	b.call(syncCallRec("r1#2", "agent-1", "op-2", "op-bbbb", 1, 0))
	b.req(simulate.Request{Call: "", Method: "PUT", Path: "/v1/records/agents/agent-1", Operation: "op-aaaa", Applied: true, ApplyOrder: 1})
	b.req(simulate.Request{Call: "", Method: "PUT", Path: "/v1/records/agents/agent-1", Operation: "op-bbbb", Applied: true, ApplyOrder: 2})
	ev := syncEvOf(b)
	if f := decideSyncSkipUnchanged(ev); len(f) != 0 {
		t.Fatalf("a baseline with outstanding writes proves nothing, got %+v", f)
	}
	if f := decideSyncQuiescent(ev); len(f) != 2 {
		t.Fatalf("expected both calls to have late writes, got %+v", f)
	}
}

func TestRecoverDecisions(t *testing.T) {
	b := newSyncHist("recovery")
	b.call(syncCallRec("r1#1", "agent-1", "op-1", "op-aaaa", 1, 0))
	b.h.Events[0].Call.Outcome = simulate.OutcomeHostLoss
	b.call(syncCallRec("r2#1", "agent-1", "op-2", "op-bbbb", 1, 0))
	b.call(recoverCallRec("r1#2", "op-1", "op-aaaa", syncBool(true), 1))
	b.req(simulate.Request{Call: "r1#2", Method: "POST", Path: "/v1/fences", Body: json.RawMessage(`{"agent_id":"agent-1","operation_id":"op-aaaa"}`), Applied: true, ApplyOrder: 1})
	b.call(recoverCallRec("r2#2", "op-1", "op-aaaa", syncBool(true), 1))
	// The held write of op-1 is refused by the fence: fine for every check.
	b.req(simulate.Request{Call: "r1#1", Method: "PUT", Path: "/v1/records/agents/agent-1", Operation: "op-aaaa", Fenced: true, Status: 409})
	ev := syncEvOf(b)
	for name, d := range map[string]func(*Evidence) []Finding{"truth": decideRecoverTruth, "idempotent": decideRecoverIdempotent, "fence": decideRecoverNoFenceNewer} {
		if f := d(ev); len(f) != 0 {
			t.Fatalf("%s: correct recovery flagged: %+v", name, f)
		}
	}

	// A write of op-1 lands after recover said True; recover flips to False; a newer operation is fenced.
	b.req(simulate.Request{Call: "r1#1", Method: "PUT", Path: "/v1/records/agents/agent-1", Applied: true, ApplyOrder: 2})
	b.call(recoverCallRec("r1#3", "op-1", "op-aaaa", syncBool(false), 3))
	b.call(recoverCallRec("r1#4", "op-1", "op-aaaa", syncBool(true), 4))
	b.req(simulate.Request{Call: "r1#4", Method: "POST", Path: "/v1/fences", Body: json.RawMessage(`{"agent_id":"agent-1","operation_id":"op-bbbb"}`), Applied: true, ApplyOrder: 4})
	b.req(simulate.Request{Call: "r2#1", Method: "PUT", Path: "/v1/records/agents/agent-1", Operation: "op-bbbb", Fenced: true, Status: 409})
	if f := decideRecoverTruth(ev); len(f) != 1 || !strings.Contains(f[0].Message, "op-1") {
		t.Fatalf("expected RECOVER-TRUTH finding, got %+v", f)
	}
	if f := decideRecoverIdempotent(ev); len(f) != 1 || f[0].Warning {
		t.Fatalf("expected one RECOVER-IDEMPOTENT failure, got %+v", f)
	}
	f := decideRecoverNoFenceNewer(ev)
	if len(f) != 2 || !strings.Contains(f[0].Message, "op-2") || !strings.Contains(f[1].Message, "op-2") {
		t.Fatalf("expected the foreign fence and the refused newer write, got %+v", f)
	}
}

func TestLeakInventoryAndRetrofit(t *testing.T) {
	// Sandbox ops carry their content in an unexported field, so build them the way the platform reports
	// them: the decision must then see no secret in an empty content and only flag mode and place.
	b := newSyncHist("s")
	b.call(syncCallRec("r1#1", "agent-1", "op-1", "op-aaaa", 1, 0))
	add := func(op simulate.SandboxOp) {
		o := op
		o.Call = "r1#1"
		b.h.Events = append(b.h.Events, &simulate.Event{Kind: simulate.EventSandbox, Sandbox: &o})
	}
	add(simulate.SandboxOp{SandboxID: "sb-1", Op: harness.OpWriteFile, Path: "/home/workload/.config/x.json", Mode: 0o600})
	ev := syncEvOf(b)
	if f := decideImageNoRetrofit(ev); len(f) != 0 {
		t.Fatalf("a private data file is fine, got %+v", f)
	}
	add(simulate.SandboxOp{SandboxID: "sb-1", Op: harness.OpWriteFile, Path: "/workspace/run.sh", Mode: 0o755})
	add(simulate.SandboxOp{SandboxID: "sb-1", Op: harness.OpWriteFile, Path: "/usr/local/bin/claude", Mode: 0o644, Error: "PermissionError"})
	f := decideImageNoRetrofit(ev)
	if len(f) != 2 || !strings.Contains(f[0].Message, "executable") || !strings.Contains(f[1].Message, "refused") {
		t.Fatalf("expected an executable finding and a refused image write, got %+v", f)
	}
	if !unclaimed("waiting") || unclaimed("claimed") {
		t.Fatal("claimed boxes are not inventory")
	}
	if f := decideLeakInventory(ev); len(f) != 0 {
		t.Fatalf("no inventory, no finding: %+v", f)
	}
}

func TestSyncIdentityDisjointKeysWarn(t *testing.T) {
	b := newSyncHist("s")
	b.call(syncCallRec("r1#1", "agent-1", "op-1", "op-aaaa", 1, 1))
	b.req(simulate.Request{Call: "r1#1", Method: "PUT", Path: "/v1/records/agents/3f9c", Operation: "op-aaaa", Applied: true, ApplyOrder: 1})
	b.call(syncCallRec("r2#1", "agent-1", "op-2", "op-bbbb", 1, 2))
	b.req(simulate.Request{Call: "r2#1", Method: "PUT", Path: "/v1/records/agents/77ad", Operation: "op-bbbb", Applied: true, ApplyOrder: 2})
	f := decideSyncIdentity(syncEvOf(b))
	if len(f) != 1 || !f[0].Warning || !strings.Contains(f[0].Message, "disjoint") {
		t.Fatalf("expected one disjoint-keys warning, got %+v", f)
	}
}
