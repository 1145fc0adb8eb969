package double

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

func TestFaultKindNames(t *testing.T) {
	for _, k := range []FaultKind{Delay, Hold, Unavailable, DropAfterApply} {
		got, err := ParseFaultKind(k.String())
		if err != nil || got != k {
			t.Errorf("ParseFaultKind(%q) = %v, %v", k.String(), got, err)
		}
	}
	if k, err := ParseFaultKind("drop"); err != nil || k != DropAfterApply {
		t.Errorf("drop: %v, %v", k, err)
	}
	for _, bad := range []string{"explode", "Hold", " delay", "drop-after-apply", ""} {
		if _, err := ParseFaultKind(bad); err == nil || err.Error() != fmt.Sprintf("double fault kind %q; use delay, hold, unavailable or drop", bad) {
			t.Errorf("ParseFaultKind(%q): %v", bad, err)
		}
	}
	bad := []Fault{{Kind: 0}, {Kind: Hold, Times: -1}, {Kind: Delay}}
	for _, f := range bad {
		if f.Validate() == nil {
			t.Errorf("Validate accepted %+v", f)
		}
	}
	if err := (Fault{Kind: Delay, Duration: time.Millisecond, Times: 2}).Validate(); err != nil {
		t.Errorf("Validate refused a good fault: %v", err)
	}
}

func TestInvalidFaultNeverMatches(t *testing.T) {
	d := newDouble(t, Options{})
	d.AddFault(Fault{Kind: Unavailable, Times: -1})
	must(t, 200, "PUT", baseURL(t, d, "r1")+"/v1/records/k", `{"value": 1}`)
}

func TestDelayFault(t *testing.T) {
	d := newDouble(t, Options{})
	u := baseURL(t, d, "r1") + "/v1/records/k"
	id := d.AddFault(Fault{Kind: Delay, Duration: 10 * time.Millisecond, Method: "PUT", Times: 1})

	must(t, 200, "PUT", u, `{"value": 1}`)
	first := lastRequest(t, d)
	if !first.Delayed || !first.Applied || len(first.Faults) != 1 || first.Faults[0] != id {
		t.Fatalf("delayed write recorded as %+v", first)
	}
	must(t, 200, "PUT", u, `{"value": 2}`) // Times: 1 is used up
	if second := lastRequest(t, d); second.Delayed || len(second.Faults) != 0 {
		t.Fatalf("a used-up delay acted again: %+v", second)
	}
}

func TestHoldFault(t *testing.T) {
	d := newDouble(t, Options{})
	u := baseURL(t, d, "r1") + "/v1/records/k"
	id := d.AddFault(Fault{Kind: Hold, PathPrefix: "/v1/records/"})

	ch := sendAsync(t, "PUT", u, `{"value": 1}`)
	waitHeld(t, d, 1)
	if d.Held() != 1 {
		t.Fatalf("Held() = %d, want 1", d.Held())
	}
	if len(d.Records()) != 0 {
		t.Fatal("a held write was applied before its release")
	}
	if req := lastRequest(t, d); !req.Held || req.Done || req.Status != 0 {
		t.Fatalf("held request recorded as %+v", req)
	}
	// Unmatched requests pass while another is held.
	must(t, 201, "POST", baseURL(t, d, "r1")+"/v1/credentials", `{"principal_id": "p", "audience": "a"}`)

	if n := d.Release(id + 100); n != 0 {
		t.Fatalf("releasing an unknown fault released %d", n)
	}
	if n := d.Release(id); n != 1 {
		t.Fatalf("Release released %d, want 1", n)
	}
	if d.Held() != 0 {
		t.Fatalf("Held() = %d after release", d.Held())
	}
	res := receive(t, ch)
	if res.err != nil || res.r.status != 200 {
		t.Fatalf("released write: %v %d %s", res.err, res.r.status, res.r.raw)
	}
	if got := d.Records()["k"]; got.Version != 1 {
		t.Fatalf("released write not applied: %+v", got)
	}

	// The fault keeps holding until removed; ReleaseAll lets everything go.
	ch1 := sendAsync(t, "PUT", u, `{"value": 2}`)
	ch2 := sendAsync(t, "GET", u, "")
	waitHeld(t, d, 2)
	d.RemoveFault(id)
	must(t, 200, "GET", u, "") // no longer held
	if n := d.ReleaseAll(); n != 2 {
		t.Fatalf("ReleaseAll released %d, want 2", n)
	}
	for _, c := range []<-chan result{ch1, ch2} {
		if res := receive(t, c); res.err != nil || res.r.status != 200 {
			t.Fatalf("request after ReleaseAll: %v %d", res.err, res.r.status)
		}
	}
}

func TestReleaseOnlyReleasesItsFault(t *testing.T) {
	d := newDouble(t, Options{})
	base := baseURL(t, d, "r1")
	a := d.AddFault(Fault{Kind: Hold, PathPrefix: "/v1/records/a"})
	b := d.AddFault(Fault{Kind: Hold, PathPrefix: "/v1/records/b"})
	chA := sendAsync(t, "PUT", base+"/v1/records/a", `{"value": "a"}`)
	chB := sendAsync(t, "PUT", base+"/v1/records/b", `{"value": "b"}`)
	waitHeld(t, d, 2)
	if n := d.Release(b); n != 1 {
		t.Fatalf("Release(b) released %d", n)
	}
	if res := receive(t, chB); res.err != nil || res.r.status != 200 {
		t.Fatalf("b: %v %d", res.err, res.r.status)
	}
	if d.Held() != 1 {
		t.Fatalf("Held() = %d after releasing b, want 1", d.Held())
	}
	if _, ok := d.Records()["a"]; ok {
		t.Fatal("a was applied while still held")
	}
	d.Release(a)
	if res := receive(t, chA); res.err != nil || res.r.status != 200 {
		t.Fatalf("a: %v %d", res.err, res.r.status)
	}
	reqs := d.Requests()
	if reqs[0].ApplyOrder == 0 || reqs[1].ApplyOrder == 0 {
		t.Fatal("released writes have no apply order")
	}
	// b was applied first whatever the arrival order.
	applied := map[string]int64{reqs[0].Path: reqs[0].ApplyOrder, reqs[1].Path: reqs[1].ApplyOrder}
	if applied["/v1/records/b"] >= applied["/v1/records/a"] {
		t.Fatalf("apply order %v, want b before a", applied)
	}
}

func TestHeldWriteReleasedAfterFenceIsRefused(t *testing.T) {
	d := newDouble(t, Options{})
	base := baseURL(t, d, "r1")
	id := d.AddFault(Fault{Kind: Hold, Method: "PUT", Operation: "op-1"})

	ch := sendAsync(t, "PUT", base+"/v1/records/k", `{"value": "stale"}`, OperationHeader, "op-1")
	waitHeld(t, d, 1)
	must(t, 200, "POST", base+"/v1/fences", `{"agent_id": "a", "operation_id": "op-1"}`)
	d.Release(id)
	res := receive(t, ch)
	if res.err != nil || res.r.status != 409 || res.r.json["error"] != "fenced" {
		t.Fatalf("write released after the fence: %v %d %s", res.err, res.r.status, res.r.raw)
	}
	if len(d.Records()) != 0 {
		t.Fatal("a write released after its fence was applied")
	}
	w := d.Requests()[0]
	if !w.Held || !w.Fenced || w.Applied || w.Status != 409 {
		t.Fatalf("recorded as %+v", w)
	}
}

func TestUnavailableFault(t *testing.T) {
	d := newDouble(t, Options{})
	u1 := baseURL(t, d, "r1") + "/v1/records/k"
	u2 := baseURL(t, d, "r2") + "/v1/records/k"
	d.AddFault(Fault{Kind: Unavailable, Replica: "r1", Method: "put", Operation: "op", Times: 1}) // method case is ignored

	// Requests that do not match every field pass.
	must(t, 200, "PUT", u2, `{"value": "r2"}`, OperationHeader, "op")
	must(t, 200, "PUT", u1, `{"value": "no-op"}`)
	must(t, 200, "GET", u1, "", OperationHeader, "op")

	r := must(t, 503, "PUT", u1, `{"value": "lost"}`, OperationHeader, "op")
	if r.json["error"] != "unavailable" {
		t.Fatalf("503 body: %s", r.raw)
	}
	req := lastRequest(t, d)
	if !req.Unavailable || req.Applied || req.Status != 503 {
		t.Fatalf("recorded as %+v", req)
	}
	if got := d.Records()["k"]; string(got.Value) != `"no-op"` {
		t.Fatalf("a 503 write was applied: %s", got.Value)
	}
	must(t, 200, "PUT", u1, `{"value": "retry"}`, OperationHeader, "op") // Times: 1 used up
}

func TestDropAfterApplyFault(t *testing.T) {
	d := newDouble(t, Options{})
	base := baseURL(t, d, "r1")
	d.AddFault(Fault{Kind: DropAfterApply, Method: "PUT", Times: 1})

	_, err := send(t, "PUT", base+"/v1/records/k", `{"value": "written"}`)
	if err == nil {
		t.Fatal("the client got an answer to a dropped request")
	}
	got, ok := d.Records()["k"]
	if !ok || string(got.Value) != `"written"` || got.Version != 1 {
		t.Fatalf("dropped write not applied: %+v", got)
	}
	req := lastRequest(t, d)
	if !req.Dropped || !req.Applied || req.Status != 0 || !req.Done {
		t.Fatalf("recorded as %+v", req)
	}
	// The next write is answered normally and sees the dropped write's version.
	must(t, 200, "PUT", base+"/v1/records/k", `{"value": "again"}`, "If-Match", "1")

	// A dropped credential request still issues (and records) its token.
	d.AddFault(Fault{Kind: DropAfterApply, PathPrefix: "/v1/credentials"})
	if _, err := send(t, "POST", base+"/v1/credentials", `{"principal_id": "p", "audience": "a"}`); err == nil {
		t.Fatal("the client got an answer to a dropped credential request")
	}
	if len(d.IssuedTokens()) != 1 {
		t.Fatalf("IssuedTokens has %d tokens, want 1", len(d.IssuedTokens()))
	}
}

func TestCombinedFaults(t *testing.T) {
	d := newDouble(t, Options{})
	u := baseURL(t, d, "r1") + "/v1/records/k"
	delay := d.AddFault(Fault{Kind: Delay, Duration: time.Millisecond})
	hold := d.AddFault(Fault{Kind: Hold})
	unavail := d.AddFault(Fault{Kind: Unavailable})
	drop := d.AddFault(Fault{Kind: DropAfterApply})

	ch := sendAsync(t, "PUT", u, `{"value": 1}`)
	waitHeld(t, d, 1)
	d.Release(hold)
	res := receive(t, ch)
	if res.err != nil || res.r.status != 503 {
		t.Fatalf("unavailable must win over drop: %v %d", res.err, res.r.status)
	}
	req := lastRequest(t, d)
	want := []FaultID{delay, hold, unavail, drop}
	if fmt.Sprint(req.Faults) != fmt.Sprint(want) || !req.Delayed || !req.Held || !req.Unavailable || req.Dropped || req.Applied {
		t.Fatalf("recorded as %+v", req)
	}
}

func TestWaitHeldHonoursContextAndClose(t *testing.T) {
	d := newDouble(t, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := d.WaitHeld(ctx, 1); err == nil {
		t.Fatal("WaitHeld returned nil with nothing held and a cancelled context")
	}
	if err := d.WaitHeld(context.Background(), 0); err != nil {
		t.Fatalf("WaitHeld(0): %v", err)
	}
	errc := make(chan error, 1)
	go func() { errc <- d.WaitHeld(context.Background(), 1) }()
	_ = d.Close()
	select {
	case err := <-errc:
		if err == nil {
			t.Fatal("WaitHeld returned nil after Close with nothing held")
		}
	case <-time.After(20 * time.Second):
		t.Fatal("WaitHeld did not return after Close")
	}
}

func TestCloseReleasesHeldRequests(t *testing.T) {
	d, err := Start(Options{})
	if err != nil {
		t.Fatal(err)
	}
	base := baseURL(t, d, "r1")
	d.AddFault(Fault{Kind: Hold})
	ch1 := sendAsync(t, "PUT", base+"/v1/records/k", `{"value": 1}`)
	ch2 := sendAsync(t, "PUT", base+"/v1/records/j", `{"value": 2}`)
	waitHeld(t, d, 2)

	closed := make(chan struct{})
	go func() { _ = d.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(20 * time.Second):
		t.Fatal("Close did not return with requests held")
	}
	for _, c := range []<-chan result{ch1, ch2} {
		res := receive(t, c)
		if res.err == nil && res.r.status != 503 {
			t.Fatalf("held request after Close answered %d", res.r.status)
		}
	}
	if len(d.Records()) != 0 {
		t.Fatal("a request released by Close was applied")
	}
	if d.Held() != 0 {
		t.Fatalf("Held() = %d after Close", d.Held())
	}
	d.mu.Lock()
	active := d.activeReqs
	d.mu.Unlock()
	if active != 0 {
		t.Fatalf("%d handlers still running after Close", active)
	}
	if err := d.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := d.URL("r1"); err == nil {
		t.Fatal("URL after Close succeeded")
	}
	if _, err := send(t, "GET", base+"/v1/consents/p", ""); err == nil {
		t.Fatal("the listener still answers after Close")
	}
}

func TestCloseInterruptsDelay(t *testing.T) {
	d, err := Start(Options{})
	if err != nil {
		t.Fatal(err)
	}
	base := baseURL(t, d, "r1")
	d.AddFault(Fault{Kind: Delay, Duration: time.Hour})
	ch := sendAsync(t, "PUT", base+"/v1/records/k", `{"value": 1}`)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := d.WaitRequests(ctx, 1); err != nil {
		t.Fatal(err)
	}
	_ = d.Close()
	if res := receive(t, ch); res.err == nil && res.r.status != 503 {
		t.Fatalf("delayed request after Close answered %d", res.r.status)
	}
	if len(d.Records()) != 0 {
		t.Fatal("a delayed request interrupted by Close was applied")
	}
}

func TestConcurrentCompareAndSet(t *testing.T) {
	d := newDouble(t, Options{})
	urls := []string{baseURL(t, d, "r1") + "/v1/records/counter", baseURL(t, d, "r2") + "/v1/records/counter"}
	must(t, 200, "PUT", urls[0], `{"value": 0}`, "If-Match", "0")
	const workers, each = 4, 5
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(u string) {
			defer wg.Done()
			for done := 0; done < each; {
				r, err := send(t, "GET", u, "")
				if err != nil {
					errs <- err
					return
				}
				v := int64(r.json["version"].(float64))
				n := int64(r.json["value"].(float64))
				r, err = send(t, "PUT", u, fmt.Sprintf(`{"value": %d}`, n+1), "If-Match", fmt.Sprint(v))
				if err != nil {
					errs <- err
					return
				}
				switch r.status {
				case 200:
					done++
				case 412:
				default:
					errs <- fmt.Errorf("unexpected status %d", r.status)
					return
				}
			}
		}(urls[w%2])
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	got := d.Records()["counter"]
	if string(got.Value) != fmt.Sprint(workers*each) || got.Version != workers*each+1 {
		t.Fatalf("counter = %s version %d, want %d version %d (a lost update)", got.Value, got.Version, workers*each, workers*each+1)
	}
	reqs := d.Requests()
	for i, r := range reqs {
		if r.Seq != int64(i+1) {
			t.Fatalf("request %d has seq %d: not in arrival order", i, r.Seq)
		}
	}
}

func TestWritesOnlyAndSkip(t *testing.T) {
	d := newDouble(t, Options{})
	base := baseURL(t, d, "r1")
	// The second write of whatever kind, and only it, is answered 503; reads never count.
	d.AddFault(Fault{Kind: Unavailable, WritesOnly: true, Skip: 1, Times: 1})
	must(t, 404, "GET", base+"/v1/records/a", "")
	must(t, 200, "PUT", base+"/v1/records/a", `{"value": 1}`)
	must(t, 404, "GET", base+"/v1/records/b", "")
	must(t, 503, "POST", base+"/v1/fences", `{"agent_id": "x", "operation_id": "op"}`)
	must(t, 200, "PUT", base+"/v1/records/b", `{"value": 2}`)
	if err := (Fault{Kind: Hold, Skip: -1}).Validate(); err == nil {
		t.Fatal("a negative skip was accepted")
	}
}
