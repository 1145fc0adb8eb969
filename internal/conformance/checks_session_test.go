package conformance

import (
	"encoding/json"
	"maps"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/astrabox-dev/astrabox/internal/harness"
	"github.com/astrabox-dev/astrabox/internal/secrets"
	"github.com/astrabox-dev/astrabox/internal/simulate"
)

// sessionCall is a prepare_session of a principal's Session that returned files and environment.
func sessionCall(key, session, principal string, files map[string]string, env map[string]string) *simulate.CallRecord {
	r := &harness.Result{Type: simulate.KindMaterials, Environment: env, TurnValiditySeconds: json.RawMessage("null")}
	for _, n := range slices.Sorted(maps.Keys(files)) {
		r.Files = append(r.Files, harness.MaterialFile{Name: n, Content: []byte(files[n])})
	}
	return &simulate.CallRecord{Key: key, Replica: strings.Split(key, "#")[0], Method: "prepare_session", Outcome: simulate.OutcomeReturned,
		Ctx:    simulate.CallContext{Agent: "agent-1", Session: session, Principal: principal, Trigger: "cold_start"},
		Args:   map[string]any{"context": map[string]any{"session_id": session, "file_paths_dir": "/home/workload/.astrabox/runtime/" + session}},
		Result: r}
}

func planCall(bound bool) *simulate.CallRecord {
	return &simulate.CallRecord{Key: "r1#0", Replica: "r1", Method: "plan", Outcome: simulate.OutcomeReturned, Ctx: simulate.CallContext{Agent: "agent-1"},
		Result: &harness.Result{Type: simulate.KindPlan, SessionBound: bound}}
}

func TestBoundMaterial(t *testing.T) {
	empty := sessionCall("r1#1", "s1", "alice", nil, nil)
	if f := decideBoundMaterial(evidenceOf(fakeHistory([]*simulate.CallRecord{planCall(false), empty}))); len(f) != 0 {
		t.Fatalf("a provider that is not session-bound may return nothing; got %+v", f)
	}
	if f := decideBoundMaterial(evidenceOf(fakeHistory([]*simulate.CallRecord{planCall(true), empty}))); len(f) != 1 {
		t.Fatalf("expected one finding, got %+v", f)
	}
	envOnly := sessionCall("r1#1", "s1", "alice", nil, map[string]string{"MODE": "strict"})
	if f := decideBoundMaterial(evidenceOf(fakeHistory([]*simulate.CallRecord{planCall(true), envOnly}))); len(f) != 0 {
		t.Fatalf("environment alone is material; got %+v", f)
	}
}

func TestSessionNames(t *testing.T) {
	for _, name := range []string{"../token.json", ".hidden", "dir/token.json", ""} {
		c := sessionCall("r1#1", "s1", "alice", map[string]string{name: "content-bytes"}, nil)
		if f := decideSessionNames(evidenceOf(fakeHistory([]*simulate.CallRecord{c}))); len(f) != 1 {
			t.Errorf("name %q: expected one finding, got %+v", name, f)
		}
	}
	dup := sessionCall("r1#1", "s1", "alice", map[string]string{"token.json": "a"}, nil)
	dup.Result.Files = append(dup.Result.Files, harness.MaterialFile{Name: "token.json", Content: []byte("b")})
	if f := decideSessionNames(evidenceOf(fakeHistory([]*simulate.CallRecord{dup}))); len(f) != 1 || !strings.Contains(f[0].Message, "2 times") {
		t.Fatalf("expected one duplicate finding, got %+v", f)
	}
	ok := sessionCall("r1#1", "s1", "alice", map[string]string{"token.json": "a", "ca-bundle.pem": "b"}, nil)
	if f := decideSessionNames(evidenceOf(fakeHistory([]*simulate.CallRecord{ok}))); len(f) != 0 {
		t.Fatalf("expected no finding, got %+v", f)
	}
}

func TestSessionFilePath(t *testing.T) {
	files := map[string]string{"token.json": "token-bytes"}
	cases := []struct {
		value string
		bad   bool
	}{
		{"/home/workload/.astrabox/runtime/s1/token.json", false},
		{"/home/workload/.config/tool/token.json", true},
		{"token.json", true},
		{"/home/workload/.astrabox/runtime/s2/token.json", true}, // another Session's directory
		{"/etc/ssl/certs/ca.pem", false},                         // names no returned file
		{"strict", false},
	}
	for _, c := range cases {
		call := sessionCall("r1#1", "s1", "alice", files, map[string]string{"TOKEN_FILE": c.value})
		f := decideSessionFilePath(evidenceOf(fakeHistory([]*simulate.CallRecord{call})))
		if (len(f) > 0) != c.bad {
			t.Errorf("value %q: findings %+v, want bad=%v", c.value, f, c.bad)
		}
	}
}

func TestSessionEnvReserved(t *testing.T) {
	call := sessionCall("r1#1", "s1", "alice", nil, map[string]string{"HOME": "/x", "ASTRABOX_TOKEN": "y", "MYDEPLOY_TOKEN": "z"})
	f := decideSessionEnvReserved(evidenceOf(fakeHistory([]*simulate.CallRecord{call})))
	if len(f) != 2 {
		t.Fatalf("expected HOME and ASTRABOX_TOKEN, got %+v", f)
	}
}

func TestPyBytesReprBodyMatchesPython(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python (skipped under -short)")
	}
	inputs := []string{"plain-ascii-token", "quote'inside", "both'and\"quotes", "tab\tnl\nnul\x00hi\xff\\"}
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not found")
	}
	for _, in := range inputs {
		cmd := exec.Command(py, "-c", "import sys; r = repr(sys.stdin.buffer.read()); sys.stdout.write(r[2:-1])")
		cmd.Stdin = strings.NewReader(in)
		want, err := cmd.Output()
		if err != nil {
			t.Fatalf("python3: %v", err)
		}
		if got := pyBytesReprBody([]byte(in)); got != string(want) {
			t.Errorf("pyBytesReprBody(%q) = %q, Python says %q", in, got, want)
		}
	}
}

func TestSessionRedaction(t *testing.T) {
	key := "tab\tseparated-session-key\x01"
	c := sessionCall("r1#1", "s1", "alice", map[string]string{"session.key": key}, nil)
	ev := evidenceOf(fakeHistory([]*simulate.CallRecord{c}))
	ev.Material[key] = "file session.key from prepare_session of s1 (r1#1)"
	c.Result.Repr = "RuntimeMaterials(files=(RuntimeFile(name='session.key', content=<redacted 27 bytes>),))"
	if f := decideSessionRedaction(ev); len(f) != 0 {
		t.Fatalf("a redacted repr keeps the clause; got %+v", f)
	}
	c.Result.Repr = "RuntimeMaterials(files=(Debug(name='session.key', content=b'" + pyBytesReprBody([]byte(key)) + "'),))"
	f := decideSessionRedaction(ev)
	if len(f) != 1 || !strings.Contains(f[0].Message, "Python bytes repr") || strings.Contains(f[0].Message, "separated-session") {
		t.Fatalf("expected one finding naming the origin and not the value, got %+v", f)
	}
	c.Result.Repr = ""
	turn := &simulate.CallRecord{Key: "r1#2", Replica: "r1", Method: "prepare_turn", Outcome: simulate.OutcomeRaised,
		Error: &harness.PyError{Type: "RuntimeError", Message: "refresh failed", Traceback: "Traceback ...\nValueError: bad key " + key}}
	ev = evidenceOf(fakeHistory([]*simulate.CallRecord{c, turn}))
	ev.Material[key] = "file session.key from prepare_session of s1 (r1#1)"
	if f := decideSessionRedaction(ev); len(f) != 1 || !strings.Contains(f[0].Message, "RuntimeError traceback") {
		t.Fatalf("expected one traceback finding, got %+v", f)
	}
}

// TestLeakCrossSessionWorkloadIdentityIsTyped: a workload identity token's Session (and so its owner) comes
// from the typed context of the prepare_session that carried it, whatever its secret's display origin says.
func TestLeakCrossSessionWorkloadIdentityIsTyped(t *testing.T) {
	const widA = "astx_wid_aaaaaaaaaaaaaaaaaaaa"
	alice := sessionCall("r1#1", "s-alice", "alice", map[string]string{"id.txt": "mine"}, nil)
	alice.Args = map[string]any{"context": map[string]any{"session_id": "s-alice", "principal_id": "alice",
		"workload_identity": map[string]any{"subject": "workload:s-alice", "token": widA}}}
	carol := sessionCall("r1#2", "s-carol", "carol", map[string]string{"id.txt": widA}, nil)
	for _, origin := range []string{"workload identity token of session s-alice", "planted secret", ""} {
		h := fakeHistory([]*simulate.CallRecord{alice, carol})
		h.Secrets = []secrets.Secret{{Value: widA, Origin: origin}}
		f := decideLeakCrossSession(evidenceOf(h))
		if len(f) != 1 || !strings.Contains(f[0].Message, "carol's session s-carol") ||
			!strings.Contains(f[0].Message, "workload identity token of session s-alice for principal alice") {
			t.Errorf("origin %q: expected one finding for carol holding alice's token, got %+v", origin, f)
		}
	}
}

func TestLeakCrossSession(t *testing.T) {
	credential := func(call, principal string, order int64) simulate.Request {
		return write(call, "POST", "/v1/credentials", `{"principal_id":"`+principal+`","audience":"tools"}`, order)
	}
	const tokA, tokC, tokSvc = "astx_cred_aaaaaaaaaaaa", "astx_cred_cccccccccccc", "astx_cred_ssssssssssss"
	secretsOf := func(tokens ...string) []secrets.Secret {
		var out []secrets.Secret
		for _, t := range tokens {
			// The kind decides, not the display origin (which reads like a token's here on purpose).
			out = append(out, secrets.Secret{Value: t, Origin: "workload identity token of session s-x", Kind: secrets.KindCredential})
		}
		return out
	}
	// Each principal gets their own credential; a service credential is shared by design.
	good := fakeHistory([]*simulate.CallRecord{
		sessionCall("r1#1", "s-alice", "alice", map[string]string{"token.json": `{"token":"` + tokA + `"}`, "svc.json": tokSvc}, nil),
		sessionCall("r1#2", "s-carol", "carol", map[string]string{"token.json": `{"token":"` + tokC + `"}`, "svc.json": tokSvc}, nil),
	}, credential("r0#1", "agent-1", 1), credential("r1#1", "alice", 2), credential("r1#2", "carol", 3))
	good.Secrets = secretsOf(tokSvc, tokA, tokC)
	if f := decideLeakCrossSession(evidenceOf(good)); len(f) != 0 {
		t.Fatalf("expected no finding, got %+v", f)
	}
	// Carol's Session receives the credential issued for alice.
	bad := fakeHistory([]*simulate.CallRecord{
		sessionCall("r1#1", "s-alice", "alice", map[string]string{"token.json": `{"token":"` + tokA + `"}`}, nil),
		sessionCall("r1#2", "s-carol", "carol", map[string]string{"token.json": `{"token":"` + tokA + `"}`}, nil),
	}, credential("r1#1", "alice", 1))
	bad.Secrets = secretsOf(tokA)
	f := decideLeakCrossSession(evidenceOf(bad))
	if len(f) != 1 || !strings.Contains(f[0].Message, "carol's session s-carol") || !strings.Contains(f[0].Message, "for principal alice") {
		t.Fatalf("expected one finding for carol, got %+v", f)
	}
	// Owners unknown (no matching requests): the first receiver is taken as the owner.
	bad.Requests = nil
	if f := decideLeakCrossSession(evidenceOf(bad)); len(f) != 1 {
		t.Fatalf("expected one finding by first receipt, got %+v", f)
	}
	// A secret whose display origin reads like a credential's but whose kind is another is not one.
	bad.Secrets = []secrets.Secret{{Value: tokA, Origin: "credential issued by the deployment double"}}
	if f := decideLeakCrossSession(evidenceOf(bad)); len(f) != 0 {
		t.Fatalf("a secret of KindOther was taken for a credential by its origin text: %+v", f)
	}
}
