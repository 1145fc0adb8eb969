package double

import (
	"os/exec"
	"strings"
	"testing"
)

func TestPerReplicaListeners(t *testing.T) {
	d := newDouble(t, Options{})
	a := baseURL(t, d, "replica-a")
	b := baseURL(t, d, "replica-b")
	if a == b {
		t.Fatalf("two replicas share the URL %s", a)
	}
	for _, u := range []string{a, b} {
		if !strings.HasPrefix(u, "http://127.0.0.1:") {
			t.Fatalf("URL %s is not a loopback base URL", u)
		}
	}
	if again := baseURL(t, d, "replica-a"); again != a {
		t.Fatalf("second URL(replica-a) = %s, want %s", again, a)
	}
	if _, err := d.URL(""); err == nil {
		t.Fatal("URL(\"\") succeeded")
	}

	// One shared state: a write through a is read through b.
	must(t, 200, "PUT", a+"/v1/records/k", `{"value": "from a"}`)
	r := must(t, 200, "GET", b+"/v1/records/k", "")
	if r.json["value"] != "from a" {
		t.Fatalf("replica b read %s", r.raw)
	}
	reqs := d.Requests()
	if reqs[0].Replica != "replica-a" || reqs[1].Replica != "replica-b" {
		t.Fatalf("attributed to %q then %q", reqs[0].Replica, reqs[1].Replica)
	}
}

func TestInFlightAttribution(t *testing.T) {
	d := newDouble(t, Options{})
	a := baseURL(t, d, "a")
	b := baseURL(t, d, "b")

	must(t, 200, "GET", a+"/v1/consents/p", "") // before any callback: background
	d.SetInFlight("a", Call{Callback: "prepare", CallID: "c-1", Step: "step-3"})
	must(t, 200, "GET", a+"/v1/consents/p", "") // during prepare
	must(t, 200, "GET", b+"/v1/consents/p", "") // b has nothing in flight
	d.SetInFlight("a", Call{Callback: "release", CallID: "c-2", Step: "step-4"})
	must(t, 200, "GET", a+"/v1/consents/p", "")
	d.ClearInFlight("a")
	must(t, 200, "GET", a+"/v1/consents/p", "") // after the callback: background

	reqs := d.Requests()
	want := []*Call{nil, {"prepare", "c-1", "step-3"}, nil, {"release", "c-2", "step-4"}, nil}
	if len(reqs) != len(want) {
		t.Fatalf("%d requests, want %d", len(reqs), len(want))
	}
	for i, w := range want {
		got := reqs[i].Call
		switch {
		case w == nil && got != nil:
			t.Errorf("request %d attributed to %+v, want background", i, *got)
		case w != nil && (got == nil || *got != *w):
			t.Errorf("request %d attributed to %v, want %+v", i, got, *w)
		}
	}
	// Copies: changing the returned call does not change the record.
	reqs[1].Call.Callback = "changed"
	if d.Requests()[1].Call.Callback != "prepare" {
		t.Fatal("Requests() exposes the recorded call")
	}
}

func TestInFlightIsTakenAtArrival(t *testing.T) {
	d := newDouble(t, Options{})
	u := baseURL(t, d, "a")
	id := d.AddFault(Fault{Kind: Hold})
	d.SetInFlight("a", Call{Callback: "prepare", CallID: "c-1"})
	ch := sendAsync(t, "PUT", u+"/v1/records/k", `{"value": 1}`)
	waitHeld(t, d, 1)
	d.ClearInFlight("a") // the callback returned while its write was held
	d.Release(id)
	if res := receive(t, ch); res.err != nil || res.r.status != 200 {
		t.Fatalf("released write: %v %d", res.err, res.r.status)
	}
	if c := d.Requests()[0].Call; c == nil || c.CallID != "c-1" {
		t.Fatalf("held write attributed to %v, want the call in flight at arrival", c)
	}
}

// TestPythonClientSeesDroppedConnection checks that the drop fault looks like a lost answer to the kind of
// client providers use (Python's urllib), not like an HTTP error.
func TestPythonClientSeesDroppedConnection(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python (skipped under -short)")
	}
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not found")
	}
	d := newDouble(t, Options{})
	u := baseURL(t, d, "py")
	d.AddFault(Fault{Kind: DropAfterApply, Method: "PUT"})
	script := `
import sys, urllib.request, urllib.error
req = urllib.request.Request(sys.argv[1] + "/v1/records/k", data=b'{"value": 5}', method="PUT")
try:
    urllib.request.urlopen(req, timeout=20)
    print("answered")
except urllib.error.HTTPError as e:
    print("http-error", e.code)
except Exception as e:
    print("connection-error", type(e).__name__)
`
	out, err := exec.Command(py, "-c", script, u).CombinedOutput()
	if err != nil {
		t.Fatalf("python: %v: %s", err, out)
	}
	if !strings.HasPrefix(string(out), "connection-error") {
		t.Fatalf("python client saw %q, want a connection error", out)
	}
	if got := d.Records()["k"]; string(got.Value) != "5" {
		t.Fatalf("dropped write not applied: %+v", got)
	}
}
