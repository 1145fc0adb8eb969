package double

import (
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// vaultLike is a stand-in counting the writes it applied, as a fake of a secrets store would.
type vaultLike struct {
	mu     sync.Mutex
	writes int
}

func (v *vaultLike) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if r.Header.Get(ServiceHeader) != "" || r.Header.Get(HostHeader) != "" {
		http.Error(w, "the kit's routing headers reached the stand-in", http.StatusTeapot)
		return
	}
	if r.Method == http.MethodGet {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"data":{"value":"v"}}`))
		return
	}
	v.mu.Lock()
	v.writes++
	v.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_, _ = w.Write([]byte(`{"stored":` + string(body) + `}`))
}

func (v *vaultLike) count() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.writes
}

func TestServiceRequestsAreRecordedFaultedAndFenced(t *testing.T) {
	v := &vaultLike{}
	d := newDouble(t, Options{Upstreams: map[string]Upstream{"vault": {Handler: v, OperationHeader: "X-Request-Id"}}})
	base := baseURL(t, d, "r1")
	d.SetInFlight("r1", Call{Callback: "prepare_turn", CallID: "c1", Step: "3"})
	svc := []string{ServiceHeader, "vault", HostHeader, "vault.corp.example:8200"}

	r, err := send(t, "GET", base+"/v1/secret/data/app", "", svc...)
	if err != nil || r.status != 200 || !strings.Contains(string(r.raw), `"value":"v"`) {
		t.Fatalf("GET = %+v, %v", r, err)
	}
	r, err = send(t, "POST", base+"/v1/secret/data/app", `{"a":1}`, append(svc, "X-Request-Id", "op-1")...)
	if err != nil || r.status != 201 || v.count() != 1 {
		t.Fatalf("POST = %+v, %v (writes %d)", r, err, v.count())
	}
	d.AddFault(Fault{Kind: Unavailable, Method: "POST", Times: 1})
	if r, _ = send(t, "POST", base+"/v1/secret/data/app", `{"a":2}`, svc...); r.status != 503 || v.count() != 1 {
		t.Fatalf("503 fault: status %d, writes %d", r.status, v.count())
	}
	d.AddFault(Fault{Kind: DropAfterApply, Method: "POST", Times: 1})
	if _, err = send(t, "POST", base+"/v1/secret/data/app", `{"a":3}`, svc...); err == nil {
		t.Fatal("a dropped write was answered")
	}
	if v.count() != 2 {
		t.Fatalf("the dropped write did not apply first: writes %d", v.count())
	}
	if r, _ = send(t, "POST", base+"/v1/fences", `{"agent_id":"a","operation_id":"op-9"}`); r.status != 200 {
		t.Fatalf("fence = %d", r.status)
	}
	if r, _ = send(t, "POST", base+"/v1/secret/data/app", `{"a":4}`, append(svc, "X-Request-Id", "op-9")...); r.status != 409 || v.count() != 2 {
		t.Fatalf("fenced service write: status %d, writes %d", r.status, v.count())
	}
	if r, _ = send(t, "GET", base+"/v1/x", "", ServiceHeader, "unknown"); r.status != http.StatusBadGateway {
		t.Fatalf("unknown service = %d", r.status)
	}

	reqs := d.Requests()
	if len(reqs) != 7 {
		t.Fatalf("%d requests recorded", len(reqs))
	}
	get, post, unavail, drop, fenced := reqs[0], reqs[1], reqs[2], reqs[3], reqs[5]
	if get.Service != "vault" || get.Host != "vault.corp.example:8200" || get.Applied || get.Call == nil || get.Call.CallID != "c1" {
		t.Errorf("GET record %+v", get)
	}
	if !post.Applied || post.Operation != "op-1" || post.Status != 201 || string(post.Body) != `{"a":1}` {
		t.Errorf("POST record %+v", post)
	}
	if !unavail.Unavailable || unavail.Applied {
		t.Errorf("503 record %+v", unavail)
	}
	if !drop.Dropped || !drop.Applied || drop.ApplyOrder <= post.ApplyOrder {
		t.Errorf("drop record %+v", drop)
	}
	if !fenced.Fenced || fenced.Applied {
		t.Errorf("fenced record %+v", fenced)
	}
}
