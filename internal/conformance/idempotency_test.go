package conformance

import (
	"net/http"
	"strings"
	"testing"

	"github.com/astrabox-dev/astrabox/internal/services"
	"github.com/astrabox-dev/astrabox/internal/simulate"
)

// Decision tests of issue 26 items 4, 5 and 7: idempotency keys, RPC reads and writes, and the identity of
// the provider's own resources, over hand-built histories whose requests are classified as the history
// classifies them (serviceRequest).

var (
	tokensSvc = services.Spec{Name: "tokens"}
	awsSvc    = services.Spec{Name: "secrets"}
	kvSvc     = services.Spec{Name: "kv", Conditions: []services.Field{{Where: services.InBody, Name: "/options/cas"}}}
)

func keyHeader(k string) http.Header { return http.Header{"Idempotency-Key": {k}} }

func tokenPost(call, key string, order int64) simulate.Request {
	return serviceRequest(tokensSvc, simulate.Request{Call: call, Method: "POST", Path: "/v1/tokens", Applied: true, ApplyOrder: order, Status: 201},
		keyHeader(key), `{"principal_id":"alice"}`)
}

func awsCall(call, target, body string, order int64) simulate.Request {
	r := simulate.Request{Call: call, Method: "POST", Path: "/", Status: 200}
	h := http.Header{"X-Amz-Target": {target}, "Content-Type": {"application/x-amz-json-1.1"}}
	r = serviceRequest(awsSvc, r, h, body)
	if r.Class.Write {
		r.Applied, r.ApplyOrder = true, order
	}
	return r
}

// TestTurnIdempotentCountsAKeyedRetryOnce: a retry that POSTs again with the attempt's Idempotency-Key is
// the same write (the service answers it with the first answer); a retry that mints a new key is a new one.
func TestTurnIdempotentCountsAKeyedRetryOnce(t *testing.T) {
	calls := func() []*simulate.CallRecord {
		return []*simulate.CallRecord{
			turnCall("r1#1", "r1", "t1", false, "material-one", "300"),
			turnCall("r2#1", "r2", "t1", false, "material-one", "300"),
		}
	}
	same := fakeHistory(calls(), tokenPost("r1#1", "attempt-t1", 1), tokenPost("r2#1", "attempt-t1", 2))
	if f := decideTurnIdempotent(evidenceOf(same)); len(f) != 0 {
		t.Fatalf("a POST retried with the attempt's key must count once; got %+v", f)
	}
	fresh := fakeHistory(calls(), tokenPost("r1#1", "3f1c-uuid-a", 1), tokenPost("r2#1", "9b2e-uuid-b", 2))
	f := decideTurnIdempotent(evidenceOf(fresh))
	if len(f) != 1 || !strings.Contains(f[0].Message, "POST /v1/tokens") || !strings.Contains(f[0].Message, "header Idempotency-Key 9b2e-uuid-b) is new") {
		t.Fatalf("a retry minting a new key must fail, naming the key; got %+v", f)
	}
	// The key belongs to its service: the same value sent to another service is another write.
	other := fakeHistory(calls(), tokenPost("r1#1", "attempt-t1", 1),
		serviceRequest(services.Spec{Name: "audit"}, simulate.Request{Call: "r2#1", Method: "POST", Path: "/v1/tokens", Applied: true, ApplyOrder: 2, Status: 201}, keyHeader("attempt-t1"), `{}`))
	if f := decideTurnIdempotent(evidenceOf(other)); len(f) != 1 {
		t.Fatalf("a key is scoped to its service; got %+v", f)
	}
}

// TestTurnIdempotentCountsAConditionOnce: a check-and-set write repeated with the same condition on the same
// resource can apply once at most; the same condition on another resource is another write.
func TestTurnIdempotentCountsAConditionOnce(t *testing.T) {
	kv := func(call, path, body string, order int64) simulate.Request {
		return serviceRequest(kvSvc, simulate.Request{Call: call, Method: "POST", Path: path, Applied: true, ApplyOrder: order, Status: 200}, nil, body)
	}
	calls := []*simulate.CallRecord{turnCall("r1#1", "r1", "t1", false, "m", "300"), turnCall("r2#1", "r2", "t1", false, "m", "300")}
	h := fakeHistory(calls, kv("r1#1", "/v1/secret/data/attempts/t1", `{"options":{"cas":0},"data":{"a":1}}`, 1),
		kv("r2#1", "/v1/secret/data/attempts/t1", `{"options":{"cas":0},"data":{"a":2}}`, 2))
	if f := decideTurnIdempotent(evidenceOf(h)); len(f) != 0 {
		t.Fatalf("the same condition on the same resource counts once; got %+v", f)
	}
	calls = []*simulate.CallRecord{turnCall("r1#1", "r1", "t1", false, "m", "300"), turnCall("r2#1", "r2", "t1", false, "m", "300")}
	h = fakeHistory(calls, kv("r1#1", "/v1/secret/data/attempts/t1", `{"options":{"cas":0}}`, 1),
		kv("r2#1", "/v1/secret/data/attempts/t1-retry", `{"options":{"cas":0}}`, 2))
	if f := decideTurnIdempotent(evidenceOf(h)); len(f) != 1 {
		t.Fatalf("a condition on another resource is a new write; got %+v", f)
	}
}

// TestUAIdempotentCountsAKeyedWriteOnce: perform_user_action that re-sends its write with a key derived
// from the requirement passes; one with a new key per call fails.
func TestUAIdempotentCountsAKeyedWriteOnce(t *testing.T) {
	for _, tc := range []struct {
		name        string
		k1, k2      string
		wantFinding bool
	}{{"same key", "consent-alice", "consent-alice", false}, {"new key", "u-1", "u-2", true}} {
		b := newHist(tc.name)
		for i, key := range []string{tc.k1, tc.k2} {
			b.call(&simulate.CallRecord{Replica: "r1", Method: "read_user_actions", Ctx: simulate.CallContext{Session: "s-bob", Principal: "bob"},
				Outcome: simulate.OutcomeReturned, Result: pendingState()})
			c := b.call(&simulate.CallRecord{Replica: []string{"r1", "r2"}[i%2], Method: "perform_user_action", Args: map[string]any{"action_id": "check-consent"},
				Ctx: simulate.CallContext{Session: "s-bob", Principal: "bob"}, Outcome: simulate.OutcomeReturned, Result: pendingState()})
			b.request(serviceRequest(tokensSvc, simulate.Request{Call: c.Key, Method: "POST", Path: "/v1/consent-checks", Applied: true, ApplyOrder: int64(i + 1), Status: 201}, keyHeader(key), `{}`))
		}
		f := decideUAIdempotent(evidenceOf(b.h))
		if got := len(f) > 0; got != tc.wantFinding {
			t.Errorf("%s: finding=%v, want %v: %+v", tc.name, got, tc.wantFinding, f)
		}
	}
}

// TestSyncSkipUnchangedJudgesAWSByOperation: boto3's reads are POST / too; only the PutSecretValue of a
// second synchronize with unchanged inputs is a rewrite (its ClientRequestToken is boto3's new uuid4). The
// same token, sent again, is the same write.
func TestSyncSkipUnchangedJudgesAWSByOperation(t *testing.T) {
	run := func(secondPut bool, token2 string) []Finding {
		b := newSyncHist("aws")
		c1 := b.call(syncCallRec("r1#1", "agent-1", "op-1", "op-00000001", 1, 10))
		b.req(awsCall(c1.Key, "secretsmanager.GetSecretValue", `{"SecretId":"agents/agent-1"}`, 0))
		b.req(awsCall(c1.Key, "secretsmanager.PutSecretValue", `{"SecretId":"agents/agent-1","SecretString":"{}","ClientRequestToken":"tok-1"}`, 1))
		c2 := b.call(syncCallRec("r2#1", "agent-1", "op-2", "op-00000002", 1, 20))
		b.req(awsCall(c2.Key, "secretsmanager.GetSecretValue", `{"SecretId":"agents/agent-1"}`, 0))
		b.req(awsCall(c2.Key, "secretsmanager.DescribeSecret", `{"SecretId":"agents/agent-1"}`, 0))
		if secondPut {
			b.req(awsCall(c2.Key, "secretsmanager.PutSecretValue", `{"SecretId":"agents/agent-1","SecretString":"{}","ClientRequestToken":"`+token2+`"}`, 2))
		}
		return decideSyncSkipUnchanged(syncEvOf(b))
	}
	if f := run(false, ""); len(f) != 0 {
		t.Fatalf("reads by operation are no writes; got %+v", f)
	}
	f := run(true, "tok-2")
	if len(f) != 1 || !strings.Contains(f[0].Message, "POST / PutSecretValue") {
		t.Fatalf("a rewrite with unchanged inputs must fail, naming the operation; got %+v", f)
	}
	if f := run(true, "tok-1"); len(f) != 0 {
		t.Fatalf("the same ClientRequestToken is the same write; got %+v", f)
	}
}

// TestSyncIdentityJudgesServiceResources: a resource key of the provider's own service that changes with the
// configuration version fails, whether it is an AWS SecretId or a REST path; the same resource across
// versions passes; two Agents POSTing to one collection share no identity, two Agents writing one secret do.
func TestSyncIdentityJudgesServiceResources(t *testing.T) {
	kvPut := func(call, path string, order int64) simulate.Request {
		return serviceRequest(kvSvc, simulate.Request{Call: call, Method: "PUT", Path: path, Applied: true, ApplyOrder: order, Status: 200}, nil, `{}`)
	}
	events := func(call string, order int64) simulate.Request {
		return serviceRequest(tokensSvc, simulate.Request{Call: call, Method: "POST", Path: "/v1/events", Applied: true, ApplyOrder: order, Status: 201}, nil, `{}`)
	}
	put := func(call, id string, order int64) simulate.Request {
		return awsCall(call, "secretsmanager.PutSecretValue", `{"SecretId":"`+id+`","SecretString":"x"}`, order)
	}
	cases := []struct {
		name string
		reqs func(c1, c2 string) []simulate.Request
		a2   string
		want string // "" = no finding
	}{
		{"secret per version", func(c1, c2 string) []simulate.Request {
			return []simulate.Request{put(c1, "agents/agent-1-v1", 1), put(c2, "agents/agent-1-v2", 2)}
		}, "agent-1", `"secrets agents/agent-1-v1" for version 1 and "secrets agents/agent-1-v2" for version 2`},
		{"one secret", func(c1, c2 string) []simulate.Request {
			return []simulate.Request{put(c1, "agents/agent-1", 1), put(c2, "agents/agent-1", 2)}
		}, "agent-1", ""},
		{"path per version", func(c1, c2 string) []simulate.Request {
			return []simulate.Request{kvPut(c1, "/v1/secret/data/agents/agent-1/v1", 1), kvPut(c2, "/v1/secret/data/agents/agent-1/v2", 2)}
		}, "agent-1", "one external identity per Agent version"},
		{"two agents add to one collection", func(c1, c2 string) []simulate.Request {
			return []simulate.Request{events(c1, 1), events(c2, 2)}
		}, "agent-2", ""},
		{"two agents share one secret", func(c1, c2 string) []simulate.Request {
			return []simulate.Request{put(c1, "creators/alice", 1), put(c2, "creators/alice", 2)}
		}, "agent-2", `both wrote the external record "secrets creators/alice"`},
	}
	for _, tc := range cases {
		b := newSyncHist(tc.name)
		c1 := b.call(syncCallRec("r1#1", "agent-1", "op-1", "op-00000001", 1, 10))
		c2 := b.call(syncCallRec("r2#1", tc.a2, "op-2", "op-00000002", 2, 20))
		for _, r := range tc.reqs(c1.Key, c2.Key) {
			b.req(r)
		}
		f := decideSyncIdentity(syncEvOf(b))
		var errs []Finding
		for _, x := range f {
			if !x.Warning {
				errs = append(errs, x)
			}
		}
		switch {
		case tc.want == "" && len(errs) != 0:
			t.Errorf("%s: expected no failure, got %+v", tc.name, errs)
		case tc.want != "" && (len(errs) != 1 || !strings.Contains(errs[0].Message, tc.want)):
			t.Errorf("%s: expected one failure with %q, got %+v", tc.name, tc.want, errs)
		}
	}
}
