package stubs

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWireMock3SavedMappingsLoad loads two files exactly as WireMock 3.13 saved them (POST
// /__admin/mappings/save): id, uuid, name, persistent, metadata and insertionIndex are all accepted.
func TestWireMock3SavedMappingsLoad(t *testing.T) {
	set, err := Load("testdata/saved")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(set)
	defer srv.Close()
	if code, body, _ := do(t, srv, "GET", "/users/7", "", nil); code != 200 || body != "hi" {
		t.Fatalf("GET /users/7 = %d %q", code, body)
	}
	if code, body, _ := do(t, srv, "POST", "/x", "", nil); code != 201 || body != `{"a":1}` {
		t.Fatalf("POST /x = %d %q", code, body)
	}
	names := map[string]string{}
	for _, m := range set.Mappings() {
		names[m.ID] = m.Name
	}
	if names["e1acbc58-c7bc-4338-b5bd-cf7f93ba859c"] != "get-user" {
		t.Fatalf("ids and names not read: %v", names)
	}
}

// TestPathParametersWithTemplate: pathParameters match the variables of a urlPathTemplate, by name.
func TestPathParametersWithTemplate(t *testing.T) {
	ms, err := Parse("m.json", []byte(`{"mappings": [
	  {"request": {"method": "GET", "urlPathTemplate": "/contacts/{contactId}/addresses/{addressId}",
	    "pathParameters": {"contactId": {"equalTo": "12345"}, "addressId": {"matches": "[0-9]+"}}},
	   "response": {"status": 200, "body": "address"}},
	  {"request": {"method": "GET", "urlPathTemplate": "/files/**"}, "response": {"status": 200, "body": "file"}}]}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(NewSet(ms))
	defer srv.Close()
	cases := map[string]string{
		"/contacts/12345/addresses/99":     "200 address",
		"/contacts/12345/addresses/99?x=1": "200 address",
		"/contacts/54321/addresses/99":     "404",
		"/contacts/12345/addresses/main":   "404",
		"/contacts/12345/addresses/":       "404",
		"/contacts/12345/addresses/9/more": "404",
		"/files/a/b/c.txt":                 "200 file",
	}
	for path, want := range cases {
		code, body, _ := do(t, srv, "GET", path, "", nil)
		got := http.StatusText(code)
		if code == 200 {
			got = "200 " + body
		} else if code == 404 {
			got = "404"
		}
		if got != want {
			t.Errorf("GET %s = %d %q, want %s", path, code, body, want)
		}
	}
	for src, want := range map[string]string{
		`{"request": {"urlPath": "/a", "pathParameters": {"id": {"equalTo": "1"}}}}`:              "need a urlPathTemplate",
		`{"request": {"urlPathTemplate": "/a/{id}", "pathParameters": {"ID": {"equalTo": "1"}}}}`: "has no {ID}",
	} {
		if _, err := Parse("m.json", []byte(src), nil); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want %q", src, err, want)
		}
	}
}

// TestEveryRefusedFileIsReportedAtOnce: a directory with several bad files names each of them in one error.
func TestEveryRefusedFileIsReportedAtOnce(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"a-good.json":     `{"request": {"url": "/ok"}, "response": {"status": 200}}`,
		"b-template.json": `{"request": {"url": "/t"}, "response": {"transformers": ["response-template"]}}`,
		"c-syntax.json":   "{\n  \"request\": {,\n}",
		"d-xml.json":      `{"mappings": [{"request": {"url": "/a"}}, {"request": {"bodyPatterns": [{"equalToXml": "<a/>"}]}}]}`,
	}
	for name, src := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, err := Load(dir)
	var le *LoadError
	if !errors.As(err, &le) {
		t.Fatalf("Load = %v, want a *LoadError", err)
	}
	if len(le.Refused) != 3 || le.Files != 4 {
		t.Fatalf("refused %d of %d files, want 3 of 4: %v", len(le.Refused), le.Files, err)
	}
	msg := err.Error()
	for _, want := range []string{"3 of 4 mapping files refused", "b-template.json: mapping 1: response: response templating",
		"c-syntax.json: not a JSON object: line 2", "d-xml.json: mapping 2: request: bodyPatterns[0]: matcher \"equalToXml\""} {
		if !strings.Contains(msg, want) {
			t.Errorf("error does not say %q:\n%s", want, msg)
		}
	}
	var one *Error
	if !errors.As(err, &one) || one.File == "" {
		t.Errorf("errors.As does not reach a refused file's *Error")
	}
}

// TestClosestStubIsWireMocksWeightedDistance: the closest stub of an unmatched request is the one WireMock
// 3.13 names (recorded from the real WireMock by TestWireMockParity), not the one with the fewest differing
// parts.
func TestClosestStubIsWireMocksWeightedDistance(t *testing.T) {
	set, err := Load("testdata/parity")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct{ method, target, header, want string }{
		// search differs in three parts (the query and two headers), accounts in one (its url); the URL
		// weighs ten times a header.
		{"GET", "/search?q=other", "", "search"},
		// A urlPathTemplate is measured against the template with its variables written "_".
		{"GET", "/user/7", "", "get-admin"},
		{"GET", "/users/7/orders", "", "get-admin"},
		// One differing part each: a method (weight 3) is closer than a URL (weight 10).
		{"PUT", "/health/deep", "", "deep-health"},
		{"GET", "/searc", "", "search"},
		{"GET", "/search?q=wiremock", "X-Team: platform", "search"},
	}
	for _, c := range cases {
		u, _ := url.Parse(c.target)
		h := http.Header{}
		if k, v, ok := strings.Cut(c.header, ": "); ok {
			h.Set(k, v)
		}
		r := &Request{Method: c.method, URL: u, Header: h}
		if m := set.Match(r); m != nil {
			t.Fatalf("%s %s matched %s", c.method, c.target, m.Name)
		}
		near, why := set.Nearest(r)
		if near == nil || near.Name != c.want {
			t.Errorf("%s %s: closest %v (%v), want %s", c.method, c.target, near.Name, why, c.want)
		}
	}
	// The distance is WireMock's: URL and method match, so the parts count: the headers part is 1 (both
	// missing), the query part is the edit distance of "other" from "wiremock" (7 of 8 characters), over the
	// weights 3+10+10+3+10+3 and seven parts of 1.
	u, _ := url.Parse("/search?q=other")
	for _, m := range set.Mappings() {
		if m.Name == "search" {
			if d := m.Request.distance(&Request{Method: "GET", URL: u, Header: http.Header{}}); d.exact || d.d != (1+7.0/8)/46 {
				t.Errorf("distance = %+v, want (1+7/8)/46", d)
			}
		}
	}
}

// TestConnectionResetIsARealReset: CONNECTION_RESET_BY_PEER ends the connection with a TCP reset, which the
// client sees as ECONNRESET; EMPTY_RESPONSE closes it cleanly (EOF).
func TestConnectionResetIsARealReset(t *testing.T) {
	set, err := Load("testdata/parity")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(set)
	defer srv.Close()
	if got := send(t, srv.URL, parityRequest{method: "GET", target: "/flaky/reset"}); got.Transport != "reset" {
		t.Errorf("CONNECTION_RESET_BY_PEER: %s, want a reset", got)
	}
	if got := send(t, srv.URL, parityRequest{method: "GET", target: "/flaky/empty"}); got.Transport != "eof" {
		t.Errorf("EMPTY_RESPONSE: %s, want a clean close", got)
	}
}

// TestNoContentTypeIsAdded: a response whose mapping sets no Content-Type has none (Go's server would sniff
// one; WireMock sends none), for body, jsonBody and base64Body alike; one the mapping sets is kept.
func TestNoContentTypeIsAdded(t *testing.T) {
	set, err := Load("testdata/parity")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(set)
	defer srv.Close()
	for _, target := range []string{"/users/7", "/users/admin", "/logo.png", "/items/1"} {
		if got := send(t, srv.URL, parityRequest{method: "GET", target: target}); len(got.ContentType) != 0 {
			t.Errorf("GET %s: Content-Type %q, want none", target, got.ContentType)
		}
	}
	got := send(t, srv.URL, parityRequest{method: "GET", target: "/items/1", header: map[string]string{"X-Beta": "on"}})
	if strings.Join(got.ContentType, ",") != "text/plain" {
		t.Errorf("the mapping's own Content-Type: %q", got.ContentType)
	}
}
