package double

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzHandlers sends two requests (a method, a path, an If-Match header and a body each) to a fresh double's
// handler, the second after the first has been applied, and holds the double to its contract for any input:
// no panic, a status the spec table allows, a JSON body that decodes whenever one is sent, exactly one
// recorded request per request sent, a write applied only when answered 2xx, and a record's version that only
// grows.
func FuzzHandlers(f *testing.F) {
	f.Add("PUT", "/v1/records/k", `{"value":{"a":1}}`, "", "GET", "/v1/records/k", "", "")
	f.Add("PUT", "/v1/records/k", `{"value":1}`, "", "PUT", "/v1/records/k", `{"value":2}`, `"1"`)
	f.Add("POST", "/v1/fences", `{"operation":"op-1"}`, "", "PUT", "/v1/records/x", `{"value":null}`, "*")
	f.Add("POST", "/v1/credentials", `{"principal":"alice","scope":"s"}`, "", "POST", "/v1/consents/alice/check", "", "")
	f.Add("DELETE", "/v1/records/k", "", `"7"`, "GET", "/v1/consents/alice", "", "")
	f.Add("POST", "/v1/agents", "[]", "", "PATCH", "/v1/dispatch", "{", "")
	f.Add("GET", "/v1/records/%2e%2e", "", "", "PUT", "/v1/records/a/b", `{"value":"\u0000"}`, `W/"1"`)
	f.Fuzz(func(t *testing.T, m1, p1, b1, if1, m2, p2, b2, if2 string) {
		d, err := Start(Options{Seed: 1, MaxBody: 4096})
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		sent := 0
		for _, rq := range [][4]string{{m1, p1, b1, if1}, {m2, p2, b2, if2}} {
			r, err := http.NewRequest(rq[0], "http://double.test/", strings.NewReader(rq[2]))
			if err != nil || len(rq[1]) > 512 {
				continue // net/http's client refuses the method; a server never sees such a request
			}
			r.URL.Path = rq[1]
			if rq[3] != "" {
				r.Header.Set("If-Match", rq[3])
			}
			before := d.Records()
			w := httptest.NewRecorder()
			d.serve("r1", w, r)
			sent++
			res := w.Result()
			if res.StatusCode < 200 || res.StatusCode > 599 {
				t.Fatalf("%s %q: status %d", rq[0], rq[1], res.StatusCode)
			}
			if body := w.Body.Bytes(); len(body) > 0 {
				if ct := res.Header.Get("Content-Type"); ct != "application/json" {
					t.Fatalf("%s %q: a body with Content-Type %q", rq[0], rq[1], ct)
				}
				if !json.Valid(body) {
					t.Fatalf("%s %q: body is not JSON: %q", rq[0], rq[1], body)
				}
			}
			reqs := d.Requests()
			if len(reqs) != sent {
				t.Fatalf("%d request(s) sent, %d recorded", sent, len(reqs))
			}
			last := reqs[len(reqs)-1]
			if last.Applied && (res.StatusCode < 200 || res.StatusCode > 299) {
				t.Fatalf("%s %q: applied although answered %d", rq[0], rq[1], res.StatusCode)
			}
			after := d.Records()
			for k, rec := range after {
				if old, ok := before[k]; ok && rec.Version < old.Version {
					t.Fatalf("record %q went from version %d to %d", k, old.Version, rec.Version)
				}
			}
			if !last.Applied && len(after) != len(before) {
				t.Fatalf("%s %q: not applied, yet the records went from %d to %d", rq[0], rq[1], len(before), len(after))
			}
		}
	})
}
