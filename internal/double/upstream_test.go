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

// TestWriteFaultsCountAServicesWrites: a fault on the Nth write counts a service's requests as the service
// classifies them: its declared read (a POST search) is not a write, its PATCH is, and the double's own
// endpoints keep counting PUT, POST and DELETE.
func TestWriteFaultsCountAServicesWrites(t *testing.T) {
	v := &vaultLike{}
	reads := func(r *http.Request, _ []byte) bool {
		switch r.Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
			return false
		}
		return !(r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/v1/search"))
	}
	d := newDouble(t, Options{Upstreams: map[string]Upstream{"store": {Handler: v, IsWrite: reads}}})
	base := baseURL(t, d, "r1")
	svc := []string{ServiceHeader, "store", HostHeader, "store.corp.example:443"}
	// The second write, and only it, is answered 503.
	d.AddFault(Fault{Kind: Unavailable, WritesOnly: true, Skip: 1, Times: 1})
	must(t, 201, "POST", base+"/v1/search", `{"q":"a"}`, svc...) // a read: not counted
	must(t, 201, "PATCH", base+"/v1/items/a", `{"v":1}`, svc...) // write 1
	must(t, 201, "POST", base+"/v1/search", `{"q":"b"}`, svc...) // a read again
	must(t, 503, "PATCH", base+"/v1/items/a", `{"v":2}`, svc...) // write 2
	must(t, 200, "PUT", base+"/v1/records/a", `{"value": 1}`)    // write 3, at the double
	var writes []string
	for _, r := range d.Requests() {
		if r.Write {
			writes = append(writes, r.Method+" "+r.Path)
		}
	}
	if got := strings.Join(writes, ", "); got != "PATCH /v1/items/a, PATCH /v1/items/a, PUT /v1/records/a" {
		t.Fatalf("writes = %s", got)
	}
}
