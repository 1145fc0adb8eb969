package double

import (
	"strings"
	"testing"
	"time"
)

func TestRecordsReadWriteDelete(t *testing.T) {
	d := newDouble(t, Options{})
	u := baseURL(t, d, "r1") + "/v1/records/agent/42"

	r := must(t, 404, "GET", u, "")
	if msg, _ := r.json["error"].(string); msg == "" {
		t.Errorf("404 for a missing record has no error message: %s", r.raw)
	}
	r = must(t, 200, "PUT", u, `{"value": {"a": 1}}`)
	if r.json["version"] != float64(1) {
		t.Fatalf("first write: %s, want version 1", r.raw)
	}
	r = must(t, 200, "GET", u, "")
	if string(r.raw) != `{"value":{"a":1},"version":1}`+"\n" {
		t.Fatalf("read: %s", r.raw)
	}
	r = must(t, 200, "PUT", u, `{"value": "two"}`)
	if r.json["version"] != float64(2) {
		t.Fatalf("second write: %s, want version 2", r.raw)
	}
	must(t, 204, "DELETE", u, "")
	must(t, 404, "GET", u, "")
	must(t, 204, "DELETE", u, "") // deleting nothing still answers 204

	// A key re-created after deletion never reuses a version, so a stale If-Match cannot succeed.
	r = must(t, 200, "PUT", u, `{"value": null}`)
	if r.json["version"] != float64(3) {
		t.Fatalf("write after delete: %s, want version 3", r.raw)
	}
	recs := d.Records()
	if len(recs) != 1 || string(recs["agent/42"].Value) != "null" || recs["agent/42"].Version != 3 {
		t.Fatalf("Records() = %+v", recs)
	}
}

func TestRecordsCompareAndSet(t *testing.T) {
	d := newDouble(t, Options{})
	u := baseURL(t, d, "r1") + "/v1/records/k"

	must(t, 412, "PUT", u, `{"value": 1}`, "If-Match", "1") // does not exist
	must(t, 200, "PUT", u, `{"value": 1}`, "If-Match", "0") // must not exist: ok
	r := must(t, 412, "PUT", u, `{"value": 2}`, "If-Match", "0")
	if r.json["error"] == nil {
		t.Errorf("412 without an error message: %s", r.raw)
	}
	must(t, 412, "PUT", u, `{"value": 2}`, "If-Match", "7")
	r = must(t, 200, "PUT", u, `{"value": 2}`, "If-Match", "1")
	if r.json["version"] != float64(2) {
		t.Fatalf("CAS write: %s", r.raw)
	}
	must(t, 412, "DELETE", u, "", "If-Match", "1")
	if got := d.Records()["k"]; string(got.Value) != "2" || got.Version != 2 {
		t.Fatalf("after refused writes: %+v", got)
	}
	must(t, 204, "DELETE", u, "", "If-Match", "2")
	if len(d.Records()) != 0 {
		t.Fatalf("record survived its deletion: %+v", d.Records())
	}
	for _, req := range d.Requests() {
		wantApplied := req.Status == 200 || req.Status == 204
		if req.Applied != wantApplied {
			t.Errorf("request %d (%s, status %d): Applied=%v", req.Seq, req.Method, req.Status, req.Applied)
		}
	}
}

func TestBadRequests(t *testing.T) {
	d := newDouble(t, Options{})
	base := baseURL(t, d, "r1")
	cases := []struct {
		name, method, path, body string
		headers                  []string
		wantInError              string
	}{
		{"broken JSON", "PUT", "/v1/records/k", `{"value": `, nil, "not a valid JSON object"},
		{"empty body", "PUT", "/v1/records/k", ``, nil, "empty"},
		{"array body", "PUT", "/v1/records/k", `[1]`, nil, "not a valid JSON object"},
		{"null body", "PUT", "/v1/records/k", `null`, nil, "null"},
		{"trailing data", "PUT", "/v1/records/k", `{"value": 1} {}`, nil, "after the JSON object"},
		{"no value", "PUT", "/v1/records/k", `{"valeu": 1}`, nil, `"value"`},
		{"bad If-Match", "PUT", "/v1/records/k", `{"value": 1}`, []string{"If-Match", "abc"}, "If-Match"},
		{"negative If-Match", "PUT", "/v1/records/k", `{"value": 1}`, []string{"If-Match", "-1"}, "If-Match"},
		{"fence without operation", "POST", "/v1/fences", `{"agent_id": "a"}`, nil, "operation_id"},
		{"fence with empty agent", "POST", "/v1/fences", `{"agent_id": "", "operation_id": "o"}`, nil, "agent_id"},
		{"fence with number", "POST", "/v1/fences", `{"agent_id": "a", "operation_id": 3}`, nil, "operation_id"},
		{"credential without audience", "POST", "/v1/credentials", `{"principal_id": "p"}`, nil, "audience"},
		{"credential bad JSON", "POST", "/v1/credentials", `principal=p`, nil, "not a valid JSON object"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := must(t, 400, c.method, base+c.path, c.body, c.headers...)
			msg, _ := r.json["error"].(string)
			if !strings.Contains(msg, c.wantInError) {
				t.Errorf("error %q does not mention %q", msg, c.wantInError)
			}
			if req := lastRequest(t, d); req.Applied || req.Status != 400 {
				t.Errorf("recorded %+v, want status 400 and not applied", req)
			}
		})
	}
	if len(d.Records()) != 0 || len(d.Fences()) != 0 || len(d.IssuedTokens()) != 0 {
		t.Fatalf("bad requests changed the state: records %v fences %v tokens %d",
			d.Records(), d.Fences(), len(d.IssuedTokens()))
	}
}

func TestBodyTooLarge(t *testing.T) {
	d := newDouble(t, Options{MaxBody: 16})
	r := must(t, 413, "PUT", baseURL(t, d, "r1")+"/v1/records/k", `{"value": "0123456789abcdef"}`)
	if r.json["error"] == nil {
		t.Fatalf("413 without an error: %s", r.raw)
	}
	if len(d.Records()) != 0 {
		t.Fatal("an oversized write was applied")
	}
}

func TestUnknownPathAndWrongMethod(t *testing.T) {
	d := newDouble(t, Options{})
	base := baseURL(t, d, "r1")
	for _, p := range []string{"/", "/v1/nope", "/v1/records/", "/v1/consents/", "/v1/consents/p/other", "/v1/consents/p/check/x"} {
		r := must(t, 404, "GET", base+p, "")
		if msg, _ := r.json["error"].(string); !strings.Contains(msg, p) {
			t.Errorf("GET %s: error %q does not name the path", p, msg)
		}
	}
	cases := []struct{ method, path, allow string }{
		{"POST", "/v1/records/k", "GET, PUT, DELETE"},
		{"GET", "/v1/fences", "POST"},
		{"GET", "/v1/credentials", "POST"},
		{"PUT", "/v1/consents/p", "GET"},
		{"GET", "/v1/consents/p/check", "POST"},
		{"GET", "/v1/agents", "POST"},
		{"DELETE", "/v1/dispatch", "POST"},
	}
	for _, c := range cases {
		r := must(t, 405, c.method, base+c.path, `{}`)
		if got := r.header.Get("Allow"); got != c.allow {
			t.Errorf("%s %s: Allow %q, want %q", c.method, c.path, got, c.allow)
		}
		if r.json["error"] == nil {
			t.Errorf("%s %s: 405 without an error: %s", c.method, c.path, r.raw)
		}
	}
	if n := len(d.ForbiddenCalls()); n != 0 {
		t.Errorf("wrong-method calls were recorded as %d forbidden calls", n)
	}
}

func TestFences(t *testing.T) {
	d := newDouble(t, Options{})
	base := baseURL(t, d, "r1")
	u := base + "/v1/records/k"

	must(t, 200, "PUT", u, `{"value": "before"}`, OperationHeader, "op-1")
	r := must(t, 200, "POST", base+"/v1/fences", `{"agent_id": "agent-1", "operation_id": "op-1"}`)
	if string(r.raw) != `{"fenced":"op-1"}`+"\n" {
		t.Fatalf("fence answer: %s", r.raw)
	}
	r = must(t, 409, "PUT", u, `{"value": "after"}`, OperationHeader, "op-1")
	if string(r.raw) != `{"error":"fenced"}`+"\n" {
		t.Fatalf("fenced answer: %s", r.raw)
	}
	req := lastRequest(t, d)
	if !req.Fenced || req.Applied || req.Operation != "op-1" {
		t.Fatalf("fenced write recorded as %+v", req)
	}
	must(t, 409, "DELETE", u, "", OperationHeader, "op-1")
	must(t, 409, "POST", base+"/v1/credentials", `{"principal_id": "p", "audience": "a"}`, OperationHeader, "op-1")
	must(t, 409, "POST", base+"/v1/consents/p/check", ``, OperationHeader, "op-1")
	if got := d.Records()["k"]; string(got.Value) != `"before"` {
		t.Fatalf("a fenced write changed the record: %s", got.Value)
	}
	if len(d.IssuedTokens()) != 0 {
		t.Fatal("a fenced credential request issued a token")
	}

	// Reads are not fenced; other operations and writes without the header are not either.
	must(t, 200, "GET", u, "", OperationHeader, "op-1")
	must(t, 200, "PUT", u, `{"value": "other"}`, OperationHeader, "op-2")
	must(t, 200, "PUT", u, `{"value": "none"}`)

	// Fencing again is idempotent and keeps the first fence.
	must(t, 200, "POST", base+"/v1/fences", `{"agent_id": "agent-9", "operation_id": "op-1"}`, OperationHeader, "op-1")
	must(t, 200, "POST", base+"/v1/fences", `{"agent_id": "agent-1", "operation_id": "op-2"}`)
	fences := d.Fences()
	if len(fences) != 2 || fences[0].OperationID != "op-1" || fences[0].AgentID != "agent-1" ||
		fences[1].OperationID != "op-2" || fences[0].Seq == 0 || fences[1].Seq <= fences[0].Seq {
		t.Fatalf("Fences() = %+v", fences)
	}
	must(t, 409, "PUT", u, `{"value": "late"}`, OperationHeader, "op-2")
}

func TestCredentials(t *testing.T) {
	d := newDouble(t, Options{})
	u := baseURL(t, d, "r1") + "/v1/credentials"
	var tokens []string
	for i := 0; i < 3; i++ {
		r := must(t, 201, "POST", u, `{"principal_id": "user-1", "audience": "svc"}`)
		tok, _ := r.json["token"].(string)
		if !strings.HasPrefix(tok, TokenPrefix) || len(tok) < len(TokenPrefix)+20 {
			t.Fatalf("token %d is not a recognisable fresh token (len %d)", i, len(tok))
		}
		if r.json["expires_in"] != float64(3600) {
			t.Fatalf("expires_in = %v, want 3600", r.json["expires_in"])
		}
		for _, old := range tokens {
			if old == tok {
				t.Fatal("a token was issued twice")
			}
		}
		tokens = append(tokens, tok)
	}
	issued := d.IssuedTokens()
	if len(issued) != 3 {
		t.Fatalf("IssuedTokens has %d tokens, want 3", len(issued))
	}
	for i := range issued {
		if issued[i] != tokens[i] {
			t.Fatalf("IssuedTokens()[%d] differs from the token answered", i)
		}
	}
	creds := d.Credentials()
	if len(creds) != 3 || creds[1].PrincipalID != "user-1" || creds[1].Audience != "svc" || creds[1].Token != tokens[1] {
		t.Fatal("Credentials() does not match the issued credentials")
	}

	d2 := newDouble(t, Options{CredentialTTL: 90 * time.Second})
	r := must(t, 201, "POST", baseURL(t, d2, "r1")+"/v1/credentials", `{"principal_id": "p", "audience": "a"}`)
	if r.json["expires_in"] != float64(90) {
		t.Fatalf("expires_in = %v, want 90", r.json["expires_in"])
	}
}

func TestConsent(t *testing.T) {
	d := newDouble(t, Options{})
	base := baseURL(t, d, "r1")

	r := must(t, 200, "GET", base+"/v1/consents/alice", "")
	if string(r.raw) != `{"status":"granted","url":""}`+"\n" {
		t.Fatalf("default consent: %s", r.raw)
	}
	d.SetConsent("bob", ConsentPending, "https://consent.example/bob")
	want := `{"status":"pending","url":"https://consent.example/bob"}` + "\n"
	for _, m := range []string{"GET", "POST", "POST"} {
		path := "/v1/consents/bob"
		if m == "POST" {
			path += "/check"
		}
		r = must(t, 200, m, base+path, "")
		if string(r.raw) != want {
			t.Fatalf("%s %s: %s, want %s", m, path, r.raw, want)
		}
	}

	d.SetConsentOnCheck("bob", ConsentGranted)
	r = must(t, 200, "GET", base+"/v1/consents/bob", "")
	if r.json["status"] != ConsentPending {
		t.Fatalf("a read flipped the consent: %s", r.raw)
	}
	for i := 0; i < 2; i++ {
		r = must(t, 200, "POST", base+"/v1/consents/bob/check", `{}`)
		if string(r.raw) != `{"status":"granted","url":"https://consent.example/bob"}`+"\n" {
			t.Fatalf("check %d after the flip: %s", i, r.raw)
		}
	}
	if st, url := d.Consent("bob"); st != ConsentGranted || url != "https://consent.example/bob" {
		t.Fatalf("Consent(bob) = %q, %q", st, url)
	}

	// A cancelled switch does not happen.
	d.SetConsentOnCheck("carol", ConsentPending)
	d.SetConsentOnCheck("carol", "")
	r = must(t, 200, "POST", base+"/v1/consents/carol/check", "")
	if r.json["status"] != ConsentGranted {
		t.Fatalf("cancelled switch happened: %s", r.raw)
	}
}

func TestForbiddenEndpoints(t *testing.T) {
	d := newDouble(t, Options{})
	base := baseURL(t, d, "r1")
	must(t, 200, "GET", base+"/v1/consents/p", "")
	must(t, 201, "POST", base+"/v1/consents/p/flows", `{}`)
	must(t, 201, "POST", base+"/v1/agents", `{"name": "x"}`)
	must(t, 202, "POST", base+"/v1/dispatch", `{"input": "hi"}`)
	must(t, 200, "POST", base+"/v1/consents/p/check", "")

	calls := d.ForbiddenCalls()
	var paths []string
	for _, c := range calls {
		paths = append(paths, c.Path)
		if !c.Forbidden || c.Replica != "r1" {
			t.Errorf("forbidden call recorded as %+v", c)
		}
	}
	if strings.Join(paths, " ") != "/v1/consents/p/flows /v1/agents /v1/dispatch" {
		t.Fatalf("ForbiddenCalls paths = %v", paths)
	}
	if string(calls[1].Body) != `{"name": "x"}` {
		t.Errorf("forbidden call body = %q", calls[1].Body)
	}
}

func TestRecordedRequestFields(t *testing.T) {
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tick := 0
	clock := func() time.Time { tick++; return base.Add(time.Duration(tick) * time.Second) }
	d := newDouble(t, Options{Clock: clock})
	u := baseURL(t, d, "r1")

	must(t, 200, "PUT", u+"/v1/records/k", `{"value": 1}`, OperationHeader, "op-7", "Authorization", "Bearer s3cret")
	must(t, 200, "GET", u+"/v1/records/k", "")
	must(t, 404, "GET", u+"/missing", "")

	reqs := d.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests recorded, want 3", len(reqs))
	}
	for i, r := range reqs {
		if r.Seq != int64(i+1) || !r.Arrival.Equal(base.Add(time.Duration(i+1)*time.Second)) || !r.Done || r.Replica != "r1" {
			t.Errorf("request %d: seq %d arrival %v done %v replica %q", i, r.Seq, r.Arrival, r.Done, r.Replica)
		}
	}
	w := reqs[0]
	if w.Method != "PUT" || w.Path != "/v1/records/k" || string(w.Body) != `{"value": 1}` || w.Operation != "op-7" ||
		w.Header.Get("Authorization") != "Bearer s3cret" || w.Status != 200 || !w.Applied || w.ApplyOrder != 1 {
		t.Errorf("write recorded as %+v", w)
	}
	if reqs[1].Applied || reqs[1].ApplyOrder != 0 || reqs[1].Status != 200 {
		t.Errorf("read recorded as %+v", reqs[1])
	}
	if reqs[2].Status != 404 {
		t.Errorf("unknown path recorded with status %d", reqs[2].Status)
	}

	// Requests returns copies: changing them does not change the record.
	reqs[0].Body[0] = 'X'
	reqs[0].Header.Set("Authorization", "changed")
	again := d.Requests()[0]
	if again.Body[0] != '{' || again.Header.Get("Authorization") != "Bearer s3cret" {
		t.Fatal("Requests() exposes the recorded request")
	}
}

func TestStartRejectsBadOptions(t *testing.T) {
	if _, err := Start(Options{CredentialTTL: -time.Second}); err == nil {
		t.Error("a negative TTL was accepted")
	}
	if _, err := Start(Options{MaxBody: -1}); err == nil {
		t.Error("a negative MaxBody was accepted")
	}
}
