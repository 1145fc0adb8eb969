package stubs

import (
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// serve loads the WireMock-shaped mappings under testdata/wiremock (written in the shape of WireMock's own
// documentation examples) and serves them.
func serve(t *testing.T) (*Set, *httptest.Server) {
	t.Helper()
	set, err := Load("testdata/wiremock")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(set)
	t.Cleanup(srv.Close)
	return set, srv
}

func do(t *testing.T, srv *httptest.Server, method, path, body string, header map[string]string) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		return -1, err.Error(), nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

func TestDocumentedBasicStub(t *testing.T) {
	_, srv := serve(t)
	code, body, h := do(t, srv, "GET", "/some/thing", "", nil)
	if code != 200 || body != "Hello world!" || h.Get("Content-Type") != "text/plain" {
		t.Fatalf("GET /some/thing = %d %q %v", code, body, h)
	}
	// url matches path and query exactly.
	if code, _, _ := do(t, srv, "GET", "/some/thing?x=1", "", nil); code != 404 {
		t.Fatalf("url with a query matched the exact url: %d", code)
	}
	if code, _, _ := do(t, srv, "GET", "/some/thing/else", "", nil); code != 404 {
		t.Fatalf("GET /some/thing/else = %d, want 404", code)
	}
}

func TestEveryRequestAttribute(t *testing.T) {
	_, srv := serve(t)
	auth := "Basic " + base64.StdEncoding.EncodeToString([]byte("jeff@example.com:jeffteenjefftyjeff"))
	good := map[string]string{"Accept": "application/json", "Cookie": "session=abc12345def", "Authorization": auth}
	body := `{"total_results": 4}`
	if code, got, _ := do(t, srv, "PATCH", "/everything?search_term=WireMock", body, good); code != 200 || got != `{"found":true}` {
		t.Fatalf("matching request = %d %q", code, got)
	}
	cases := map[string]func(h map[string]string) (string, string){
		"query": func(h map[string]string) (string, string) { return "/everything?search_term=other", body },
		"header": func(h map[string]string) (string, string) {
			h["Accept"] = "text/xml"
			return "/everything?search_term=WireMock", body
		},
		"cookie": func(h map[string]string) (string, string) {
			h["Cookie"] = "session=999"
			return "/everything?search_term=WireMock", body
		},
		"auth": func(h map[string]string) (string, string) {
			h["Authorization"] = "Basic " + base64.StdEncoding.EncodeToString([]byte("jeff@example.com:wrong"))
			return "/everything?search_term=WireMock", body
		},
		"json body": func(h map[string]string) (string, string) {
			return "/everything?search_term=WireMock", `{"total_results": 5}`
		},
	}
	for name, mk := range cases {
		h := map[string]string{}
		for k, v := range good {
			h[k] = v
		}
		path, b := mk(h)
		if code, got, _ := do(t, srv, "POST", path, b, h); code != 404 {
			t.Errorf("%s differs but the stub matched: %d %q", name, code, got)
		} else if !strings.Contains(got, "Closest stub") {
			t.Errorf("%s: the 404 does not name the closest stub: %q", name, got)
		}
	}
}

func TestPriorityPatternsTemplatesAndBodyFiles(t *testing.T) {
	_, srv := serve(t)
	if code, body, _ := do(t, srv, "GET", "/v1/secret/data/app-1", "", nil); code != 200 || !strings.Contains(body, `"token":"s.stubbed"`) {
		t.Fatalf("urlPathPattern = %d %q", code, body)
	}
	if code, _, _ := do(t, srv, "GET", "/v1/secret/data/locked", "", nil); code != 403 {
		t.Fatalf("priority 1 stub lost to the pattern: %d", code)
	}
	if code, _, _ := do(t, srv, "GET", "/v1/secret/data/UPPER", "", nil); code != 404 {
		t.Fatalf("pattern must match the whole path: %d", code)
	}
	if code, body, _ := do(t, srv, "POST", "/contacts/12/addresses/99", "", nil); code != 201 || !strings.Contains(body, "1 Stub Lane") {
		t.Fatalf("urlPathTemplate with bodyFileName = %d %q", code, body)
	}
	if code, _, _ := do(t, srv, "POST", "/contacts/12/addresses", "", nil); code != 404 {
		t.Fatalf("template matched a shorter path: %d", code)
	}
	form := map[string]string{"Content-Type": "APPLICATION/X-WWW-FORM-URLENCODED"}
	if code, body, _ := do(t, srv, "POST", "/oauth/token", "grant_type=client_credentials&scope=a", form); code != 200 || !strings.Contains(body, "at-stubbed") {
		t.Fatalf("caseInsensitive header + contains body = %d %q", code, body)
	}
}

func TestScenarioStatesAndReset(t *testing.T) {
	set, srv := serve(t)
	if _, body, _ := do(t, srv, "GET", "/todo/items", "", nil); strings.Contains(body, "newspaper") {
		t.Fatalf("started state already lists the new item: %q", body)
	}
	if code, _, _ := do(t, srv, "POST", "/todo/items", "Cancel newspaper subscription", nil); code != 201 {
		t.Fatalf("POST = %d", code)
	}
	if got := set.State("To do list"); got != "Cancel newspaper item added" {
		t.Fatalf("state = %q", got)
	}
	if _, body, _ := do(t, srv, "GET", "/todo/items", "", nil); !strings.Contains(body, "Cancel newspaper") {
		t.Fatalf("new state does not list the item: %q", body)
	}
	// The POST needs the Started state: a second one is not matched.
	if code, _, _ := do(t, srv, "POST", "/todo/items", "Cancel newspaper subscription", nil); code != 404 {
		t.Fatalf("POST in the wrong state = %d, want 404", code)
	}
	set.Reset()
	if got := set.State("To do list"); got != StartedState {
		t.Fatalf("after reset state = %q", got)
	}
}

func TestJSONPathAndEqualToJSONOptions(t *testing.T) {
	_, srv := serve(t)
	ok := `{"things": [{"name": "Other", "owner": "alice", "extra": 1}, {"name": "RequiredThing", "owner": "bob"}], "meta": true}`
	if code, body, _ := do(t, srv, "PUT", "/things", ok, nil); code != 204 {
		t.Fatalf("jsonpath filter + sub-matcher + unordered equalToJson = %d %q", code, body)
	}
	for name, body := range map[string]string{
		"no required thing": `{"things": [{"name": "Other", "owner": "alice"}, {"name": "Else"}]}`,
		"no alice":          `{"things": [{"name": "RequiredThing", "owner": "bob"}, {"name": "x"}]}`,
		"not json":          `things`,
		"any-string fails":  `{"things": [{"name": "RequiredThing", "owner": "alice"}, {"name": 7}]}`,
	} {
		if code, _, _ := do(t, srv, "PUT", "/things", body, nil); code != 404 {
			t.Errorf("%s: matched (%d)", name, code)
		}
	}
}

func TestFaultDropsTheConnection(t *testing.T) {
	_, srv := serve(t)
	code, msg, _ := do(t, srv, "DELETE", "/flaky/1", "", nil)
	if code != -1 {
		t.Fatalf("a CONNECTION_RESET_BY_PEER stub answered %d", code)
	}
	if !strings.Contains(msg, "EOF") && !strings.Contains(msg, "reset") {
		t.Fatalf("unexpected client error %q", msg)
	}
}

func TestUnsupportedPartsAreRefusedWithWhere(t *testing.T) {
	cases := map[string]string{
		`{"request": {"method": "GET", "url": "/x"}, "response": {"status": 200, "transformers": ["response-template"], "body": "{{request.path}}"}}`: "templating",
		`{"request": {"method": "GET", "bodyPatterns": [{"equalToXml": "<a/>"}]}, "response": {}}`:                                                    "XML",
		`{"request": {"method": "GET", "urlPattern": "/(?=x)"}, "response": {}}`:                                                                      "lookarounds",
		`{"request": {"method": "GET", "url": "/x", "urlPath": "/x"}, "response": {}}`:                                                                "one of url",
		`{"request": {"method": "GET", "headers": {"A": {"equalTo": "x", "contains": "y"}}}, "response": {}}`:                                         "exactly one operator",
		`{"request": {"method": "GET"}, "response": {"proxyBaseUrl": "https://real.example"}}`:                                                        "never reaches a real system",
		`{"request": {"method": "GET"}, "response": {"fault": "MALFORMED_RESPONSE_CHUNK"}}`:                                                           "not supported",
		`{"request": {"methd": "GET"}, "response": {}}`:                                                                                               "unknown field",
		`{"newScenarioState": "x", "request": {}}`:                                                                                                    "need a scenarioName",
		`{"request": {"bodyPatterns": [{"matchesJsonPath": "$.a[?(@.b ==)]"}]}}`:                                                                      "JSONPath",
		"{\n  \"request\": {\n  \"method\": \"GET\",,\n}":                                                                                             "line 3",
	}
	for src, want := range cases {
		_, err := Parse("stubs/mappings/x.json", []byte(src), nil)
		if err == nil {
			t.Errorf("accepted %s", src)
			continue
		}
		if !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "stubs/mappings/x.json") {
			t.Errorf("error for %s = %q, want it to name the file and say %q", src, err, want)
		}
		var se *Error
		if !errors.As(err, &se) {
			t.Errorf("error for %s is not a *stubs.Error", src)
		}
	}
}

func TestLoadRefusesWhatIsNotARegularFile(t *testing.T) {
	dir := t.TempDir()
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "no *.json mapping") {
		t.Fatalf("empty dir: %v", err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(dir, "zero.json")); err != nil {
		t.Skip("no symlinks here:", err)
	}
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("symlink to /dev/zero: %v", err)
	}
}

func TestDeepJSONIsRefusedNotRecursed(t *testing.T) {
	deep := strings.Repeat("[", 100000) + strings.Repeat("]", 100000)
	if _, err := Parse("deep.json", []byte(deep), nil); err == nil || !strings.Contains(err.Error(), "nested") {
		t.Fatalf("deep file: %v", err)
	}
	m, err := parseMatcher([]byte(`{"equalToJson": "{}"}`))
	if err != nil {
		t.Fatal(err)
	}
	if m.Match(deep, true) {
		t.Fatal("a 100000-deep body matched {}")
	}
}
