package double

import (
	"net/http"
	"strings"
	"testing"
)

func TestResetForgetsStateAndReseedsTokens(t *testing.T) {
	issue := func(d *Double) string {
		url, err := d.URL("r1")
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.Post(url+"/v1/credentials", "application/json", strings.NewReader(`{"principal_id":"alice","audience":"a"}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		toks := d.IssuedTokens()
		return toks[len(toks)-1]
	}
	d, err := Start(Options{Seed: 42})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	first := issue(d)
	url, _ := d.URL("r1")
	req, _ := http.NewRequest(http.MethodPut, url+"/v1/records/k", strings.NewReader(`{"value": 1}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if d.AppliedCount() != 2 {
		t.Fatalf("applied %d, want 2", d.AppliedCount())
	}
	if err := d.Reset(42); err != nil {
		t.Fatal(err)
	}
	if len(d.Records()) != 0 || len(d.Requests()) != 0 || len(d.IssuedTokens()) != 0 || d.AppliedCount() != 0 {
		t.Fatalf("state survived reset: records %d requests %d tokens %d", len(d.Records()), len(d.Requests()), len(d.IssuedTokens()))
	}
	if again := issue(d); again != first {
		t.Fatalf("same seed gave a different first token after reset")
	}
	d2, _ := Start(Options{Seed: 43})
	defer d2.Close()
	if other := issue(d2); other == first {
		t.Fatalf("different seeds gave the same token")
	}
}

func TestReleaseNextGoesInArrivalOrder(t *testing.T) {
	d, err := Start(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	url, _ := d.URL("r1")
	d.AddFault(Fault{Kind: Hold, Method: "PUT"})
	errs := make(chan error, 2)
	put := func(v string) {
		req, _ := http.NewRequest(http.MethodPut, url+"/v1/records/k", strings.NewReader(`{"value": "`+v+`"}`))
		req.Header.Set("If-Match", "0")
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		errs <- err
	}
	go put("first")
	if err := d.WaitHeld(t.Context(), 1); err != nil {
		t.Fatal(err)
	}
	go put("second")
	if err := d.WaitHeld(t.Context(), 2); err != nil {
		t.Fatal(err)
	}
	seq, ok := d.ReleaseNext()
	if !ok || seq != 1 {
		t.Fatalf("released %d %v, want the first arrival", seq, ok)
	}
	<-errs
	if _, ok := d.ReleaseNext(); !ok {
		t.Fatal("second held request not released")
	}
	<-errs
	if string(d.Records()["k"].Value) != `"first"` {
		t.Fatalf("record %s, want the first write to land first", d.Records()["k"].Value)
	}
	if _, ok := d.ReleaseNext(); ok {
		t.Fatal("released a request that was not held")
	}
}
