package services

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/astrabox-dev/astrabox/internal/double"
)

func hdr(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Set(kv[i], kv[i+1])
	}
	return h
}

func awsJSON(target, body string) Input {
	return Input{Method: "POST", Path: "/", Header: hdr("X-Amz-Target", target, "Content-Type", "application/x-amz-json-1.1"), Body: []byte(body)}
}

func TestClassifyKnownProtocols(t *testing.T) {
	plain := &Spec{Name: "svc"}
	form := hdr("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
	cases := []struct {
		name     string
		in       Input
		write    bool
		protocol Protocol
		op       string
		resource string
		key      string // source=value
	}{
		{"secrets manager read", awsJSON("secretsmanager.GetSecretValue", `{"SecretId":"agents/agent-1"}`), false, ProtocolAWSJSON, "GetSecretValue", "agents/agent-1", ""},
		{"secrets manager write with its token", awsJSON("secretsmanager.PutSecretValue", `{"SecretId":"agents/agent-1","SecretString":"x","ClientRequestToken":"tok-1"}`), true, ProtocolAWSJSON, "PutSecretValue", "agents/agent-1", "body ClientRequestToken=tok-1"},
		{"create names its secret", awsJSON("secretsmanager.CreateSecret", `{"Name":"agents/agent-1","ClientRequestToken":"t"}`), true, ProtocolAWSJSON, "CreateSecret", "agents/agent-1", "body ClientRequestToken=t"},
		{"describe reads", awsJSON("secretsmanager.DescribeSecret", `{"SecretId":"a"}`), false, ProtocolAWSJSON, "DescribeSecret", "a", ""},
		{"dynamodb get item", awsJSON("DynamoDB_20120810.GetItem", `{"TableName":"agents","Key":{"pk":{"S":"a"}}}`), false, ProtocolAWSJSON, "GetItem", `agents {"pk":{"S":"a"}}`, ""},
		{"dynamodb query", awsJSON("DynamoDB_20120810.Query", `{"TableName":"agents"}`), false, ProtocolAWSJSON, "Query", "", ""},
		{"dynamodb scan", awsJSON("DynamoDB_20120810.Scan", `{"TableName":"agents"}`), false, ProtocolAWSJSON, "Scan", "", ""},
		{"dynamodb batch get", awsJSON("DynamoDB_20120810.BatchGetItem", `{}`), false, ProtocolAWSJSON, "BatchGetItem", "", ""},
		{"dynamodb transact get", awsJSON("DynamoDB_20120810.TransactGetItems", `{}`), false, ProtocolAWSJSON, "TransactGetItems", "", ""},
		{"dynamodb put item names no key", awsJSON("DynamoDB_20120810.PutItem", `{"TableName":"agents","Item":{"pk":{"S":"a"}}}`), true, ProtocolAWSJSON, "PutItem", "", ""},
		{"dynamodb update item", awsJSON("DynamoDB_20120810.UpdateItem", `{"TableName":"agents","Key":{"pk":{"S":"a"}}}`), true, ProtocolAWSJSON, "UpdateItem", `agents {"pk":{"S":"a"}}`, ""},
		{"dynamodb delete item", awsJSON("DynamoDB_20120810.DeleteItem", `{"TableName":"t","Key":{"pk":{"S":"a"}}}`), true, ProtocolAWSJSON, "DeleteItem", `t {"pk":{"S":"a"}}`, ""},
		{"dynamodb transact write", awsJSON("DynamoDB_20120810.TransactWriteItems", `{"ClientRequestToken":"c"}`), true, ProtocolAWSJSON, "TransactWriteItems", "", "body ClientRequestToken=c"},
		{"query protocol read in a form", Input{Method: "POST", Path: "/", Header: form, Body: []byte("Action=GetQueueUrl&QueueName=jobs&Version=2012-11-05")}, false, ProtocolAWSQuery, "GetQueueUrl", "", ""},
		{"query protocol write in a form", Input{Method: "POST", Path: "/", Header: form, Body: []byte("Action=SendMessage&QueueUrl=https%3A%2F%2Fq%2Fjobs&Version=2012-11-05&ClientToken=k")}, true, ProtocolAWSQuery, "SendMessage", "https://q/jobs", "body ClientToken=k"},
		{"query protocol in the URL", Input{Method: "POST", Path: "/", Query: "Action=ListUsers&Version=2010-05-08"}, false, ProtocolAWSQuery, "ListUsers", "", ""},
		{"a REST Action parameter is no AWS query", Input{Method: "POST", Path: "/v1/jobs", Query: "Action=run"}, true, ProtocolREST, "", "/v1/jobs", ""},
		{"json-rpc read", Input{Method: "POST", Path: "/rpc", Body: []byte(`{"jsonrpc":"2.0","id":1,"method":"eth_getBalance","params":[]}`)}, false, ProtocolJSONRPC, "eth_getBalance", "", ""},
		{"json-rpc write", Input{Method: "POST", Path: "/rpc", Body: []byte(`{"jsonrpc":"2.0","id":1,"method":"eth_sendTransaction"}`)}, true, ProtocolJSONRPC, "eth_sendTransaction", "", ""},
		{"json-rpc without a verb writes", Input{Method: "POST", Path: "/rpc", Body: []byte(`{"jsonrpc":"2.0","method":"eth_blockNumber"}`)}, true, ProtocolJSONRPC, "eth_blockNumber", "", ""},
		{"graphql query", Input{Method: "POST", Path: "/graphql", Body: []byte(`{"query":"query Agent($id: ID!) { agent(id: $id) { name } }"}`)}, false, ProtocolGraphQL, "query", "", ""},
		{"graphql shorthand", Input{Method: "POST", Path: "/api/graphql", Body: []byte(`{"query":"{ agents { id } }"}`)}, false, ProtocolGraphQL, "query", "", ""},
		{"graphql mutation", Input{Method: "POST", Path: "/graphql", Body: []byte(`{"query":"# save\nmutation Save { save(id: 1) { id } }"}`)}, true, ProtocolGraphQL, "mutation", "", ""},
		{"graphql named operation", Input{Method: "POST", Path: "/graphql", Body: []byte(`{"query":"query A { a } mutation B { b }","operationName":"B"}`)}, true, ProtocolGraphQL, "mutation", "", ""},
		{"graphql GET", Input{Method: "GET", Path: "/graphql", Query: "query=%7Ba%7D"}, false, ProtocolGraphQL, "query", "", ""},
		{"rest put with the standard key", Input{Method: "PUT", Path: "/v1/items/a", Header: hdr("Idempotency-Key", "k1")}, true, ProtocolREST, "", "/v1/items/a", "header Idempotency-Key=k1"},
		{"rest post", Input{Method: "POST", Path: "/v1/tokens"}, true, ProtocolREST, "", "/v1/tokens", ""},
		{"rest get", Input{Method: "GET", Path: "/v1/items/a"}, false, ProtocolREST, "", "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := Classify(plain, tc.in)
			key := ""
			if c.Key != nil {
				key = c.Key.Source + "=" + c.Key.Value
			}
			if c.Write != tc.write || c.Protocol != tc.protocol || c.Operation != tc.op || c.Resource != tc.resource || key != tc.key {
				t.Errorf("got write=%v %s op=%q resource=%q key=%q; want write=%v %s op=%q resource=%q key=%q",
					c.Write, c.Protocol, c.Operation, c.Resource, key, tc.write, tc.protocol, tc.op, tc.resource, tc.key)
			}
		})
	}
}

func TestClassifyDeclarations(t *testing.T) {
	raw, dir := parseTOML(t, `
[tool.astrabox.services.ledger]
urls = ["https://ledger.corp.example"]
run = "fake {port}"
reads = ["POST /v1/search"]
operation = "header X-Ledger-Op"
read-operations = ["peek*"]
write-operations = ["GetAndReset"]
idempotency-key = ["header X-Request-Id", "body /meta/request_id"]
conditional = ["header If-Match", "body /options/cas"]
resource = "body /entry/key"
`)
	specs, err := Parse(raw, "pyproject.toml", dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := &specs[0]
	op := func(name, body string, kv ...string) Class {
		return Classify(s, Input{Method: "POST", Path: "/v1/call", Header: hdr(append([]string{"X-Ledger-Op", name}, kv...)...), Body: []byte(body)})
	}
	if c := op("peekBalance", `{}`); c.Write || c.Protocol != ProtocolDeclared || c.Operation != "peekBalance" {
		t.Errorf("a declared read operation: %+v", c)
	}
	if c := op("GetAndReset", `{}`); !c.Write {
		t.Errorf("a declared write operation wins over its verb: %+v", c)
	}
	if c := op("getEntry", `{}`); c.Write {
		t.Errorf("an undeclared operation is judged by its verb: %+v", c)
	}
	if c := op("append", `{"meta":{"request_id":"r-7"},"entry":{"key":"agents/a"}}`); !c.Write || c.Key == nil || c.Key.Source != "body /meta/request_id" || c.Key.Value != "r-7" || c.Resource != "agents/a" {
		t.Errorf("a declared body key and resource: %+v %+v", c, c.Key)
	}
	if c := op("append", `{}`, "X-Request-Id", "h-1"); c.Key == nil || c.Key.Source != "header X-Request-Id" {
		t.Errorf("a declared header key: %+v", c.Key)
	}
	if c := op("append", `{}`, "Idempotency-Key", "std", "X-Request-Id", "h-1"); c.Key == nil || c.Key.Value != "std" {
		t.Errorf("the standard header is recognised first: %+v", c.Key)
	}
	cas := op("append", `{"options":{"cas":3},"entry":{"key":"agents/a"}}`)
	if cas.Key == nil || cas.Key.Kind != KeyConditional || cas.Key.Value != "3" {
		t.Fatalf("a check-and-set field is a condition: %+v", cas.Key)
	}
	other := op("append", `{"options":{"cas":3},"entry":{"key":"agents/b"}}`)
	if cas.KeyID("ledger") == other.KeyID("ledger") {
		t.Error("the same condition on two resources must be two writes")
	}
	if c := Classify(s, Input{Method: "POST", Path: "/v1/search"}); c.Write {
		t.Error("a declared read route reads")
	}
	// The double's own endpoints: the standard key, and the record key as the resource.
	d := Classify(nil, Input{Method: "PUT", Path: "/v1/records/agents/a", Header: hdr("Idempotency-Key", "x")})
	if !d.Write || d.Resource != "agents/a" || d.Key == nil {
		t.Errorf("the double's record write: %+v", d)
	}
	if d := Classify(nil, Input{Method: "POST", Path: "/v1/credentials"}); !d.Write || d.Resource != "" {
		t.Errorf("the double's credential write names no resource: %+v", d)
	}
}

func TestParseClassificationErrors(t *testing.T) {
	for key, bad := range map[string]string{
		"operation":        `operation = "cookie x"`,
		"read-operations":  `read-operations = ["Get*Item"]`,
		"idempotency-key":  `idempotency-key = ["ClientToken"]`,
		"conditional":      `conditional = 3`,
		"resource":         `resource = ["body"]`,
		"write-operations": `write-operations = "Put*"`,
	} {
		raw, dir := parseTOML(t, "[tool.astrabox.services.s]\nurls = [\"https://s.corp.example\"]\nrun = \"f {port}\"\n"+bad+"\n")
		_, err := Parse(raw, "pyproject.toml", dir, func(string) int { return 4 })
		errs := Errors(err)
		if len(errs) != 1 || errs[0].Key != key || errs[0].Line != 4 || !strings.Contains(err.Error(), "pyproject.toml:4: services.s."+key) {
			t.Errorf("%s: got %v", bad, err)
		}
	}
}

// TestWriteFaultsSkipAWSReads: the double counts a declared service's writes for its faults as Classify
// does, body included: boto3's reads (POST / with a Get target, a query-protocol Describe in a form body)
// are not writes, so "the first write" of a fault is the PutSecretValue.
func TestWriteFaultsSkipAWSReads(t *testing.T) {
	stand := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(200) })
	spec := Spec{Name: "aws"}
	d, err := double.Start(double.Options{Upstreams: map[string]double.Upstream{"aws": Upstream(spec, staticStandIn{stand})}})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	d.AddFault(double.Fault{Kind: double.Unavailable, WritesOnly: true, Times: 1})
	base, err := d.URL("r1")
	if err != nil {
		t.Fatal(err)
	}
	send := func(target, ct, body string) int {
		req := httptest.NewRequest("POST", base+"/", strings.NewReader(body))
		req.RequestURI = ""
		req.Header.Set(double.ServiceHeader, "aws")
		req.Header.Set("Content-Type", ct)
		if target != "" {
			req.Header.Set("X-Amz-Target", target)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	if s := send("secretsmanager.GetSecretValue", "application/x-amz-json-1.1", `{"SecretId":"a"}`); s != 200 {
		t.Errorf("a read got %d", s)
	}
	if s := send("", "application/x-www-form-urlencoded", "Action=DescribeStacks&Version=2010-05-15"); s != 200 {
		t.Errorf("a query-protocol read got %d", s)
	}
	if s := send("secretsmanager.PutSecretValue", "application/x-amz-json-1.1", `{"SecretId":"a"}`); s != 503 {
		t.Errorf("the first write got %d, want the fault's 503", s)
	}
}

type staticStandIn struct{ h http.Handler }

func (s staticStandIn) Handler() http.Handler     { return s.h }
func (staticStandIn) Reset(context.Context) error { return nil }
func (staticStandIn) Alive() error                { return nil }
func (staticStandIn) Close() error                { return nil }

func FuzzClassify(f *testing.F) {
	f.Add("POST", "/", "", "secretsmanager.GetSecretValue", "application/x-amz-json-1.1", []byte(`{"SecretId":"a","ClientRequestToken":"t"}`))
	f.Add("POST", "/graphql", "query=%7Ba%7D", "", "application/json", []byte(`{"query":"mutation { a }","operationName":3}`))
	f.Add("POST", "/", "Action=X&Version=1", "", "application/x-www-form-urlencoded", []byte("Action=Put&ClientToken=%ZZ"))
	f.Add("POST", "/rpc", "", "", "", []byte(`{"jsonrpc":"2.0","method":"a_b","options":{"cas":[1]}}`))
	op := Field{InBody, "/a/~1b/0"}
	spec := &Spec{Name: "s", Operation: &op, IdempotencyKeys: []Field{{InBody, "/x/y"}, {InQuery, "k"}}, Conditions: []Field{{InHeader, "If-Match"}}, Resource: []Field{{InBody, "/r"}}, ReadOperations: []string{"g*"}}
	f.Fuzz(func(t *testing.T, method, path, query, target, ct string, body []byte) {
		h := hdr("Content-Type", ct, "X-Amz-Target", target)
		for _, s := range []*Spec{nil, {Name: "plain"}, spec} {
			c := Classify(s, Input{Method: method, Path: path, Query: query, Header: h, Body: body})
			if c.Key != nil && c.Key.Value == "" {
				t.Fatalf("a key with no value: %+v", c.Key)
			}
			_ = c.KeyID("s")
		}
	})
}
