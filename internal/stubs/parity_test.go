package stubs

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// parityRequest is one request the parity test sends to WireMock and to the kit.
type parityRequest struct {
	method, target, body string
	header               map[string]string
}

// parityRequests exercise every kind of matching in testdata/parity, matched and unmatched; the unmatched
// ones are chosen so that counting mismatches and WireMock's weighted distance name different closest stubs.
var parityRequests = []parityRequest{
	{method: "GET", target: "/users/7"},
	{method: "GET", target: "/users/admin"},
	{method: "GET", target: "/users/7/orders"},
	{method: "POST", target: "/orders", body: `{"item": "book"}`, header: map[string]string{"Content-Type": "application/json"}},
	{method: "POST", target: "/orders", body: `{"other": 1}`, header: map[string]string{"Content-Type": "application/json"}},
	{method: "GET", target: "/search?q=wiremock", header: map[string]string{"X-Team": "platform", "X-Env": "prod"}},
	{method: "GET", target: "/search?q=wiremock", header: map[string]string{"X-Team": "platform"}},
	{method: "GET", target: "/search?q=other"},
	{method: "GET", target: "/searc"},
	{method: "GET", target: "/accounts"},
	{method: "DELETE", target: "/accounts"},
	{method: "GET", target: "/user/7"},
	{method: "GET", target: "/health"},
	{method: "POST", target: "/health"},
	{method: "POST", target: "/health/deep"},
	{method: "PUT", target: "/health/deep"},
	{method: "GET", target: "/items/1"},
	{method: "GET", target: "/items/1", header: map[string]string{"X-Beta": "on"}},
	{method: "GET", target: "/logo.png"},
	{method: "POST", target: "/oauth/token", body: "grant_type=client_credentials",
		header: map[string]string{"Authorization": "Basic " + base64.StdEncoding.EncodeToString([]byte("client:s3cret")),
			"Content-Type": "application/x-www-form-urlencoded"}},
	{method: "POST", target: "/oauth/token", body: "grant_type=client_credentials",
		header: map[string]string{"Authorization": "Basic " + base64.StdEncoding.EncodeToString([]byte("client:wrong"))}},
	{method: "GET", target: "/flaky/reset"},
	{method: "GET", target: "/flaky/empty"},
}

// parityAnswer is what a server did with a request: its status, body and Content-Type, or how the
// connection failed.
type parityAnswer struct {
	Status      int
	Body        string
	ContentType []string
	Transport   string // "reset", "eof" or "" when there was an answer
}

func (a parityAnswer) String() string {
	if a.Transport != "" {
		return "connection " + a.Transport
	}
	return fmt.Sprintf("%d %q Content-Type=%q", a.Status, a.Body, a.ContentType)
}

// send sends one request on a fresh connection and records the answer.
func send(t *testing.T, base string, pr parityRequest) parityAnswer {
	t.Helper()
	req, err := http.NewRequest(pr.method, base+pr.target, strings.NewReader(pr.body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range pr.header {
		req.Header.Set(k, v)
	}
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 20 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		switch {
		case errors.Is(err, syscall.ECONNRESET):
			return parityAnswer{Transport: "reset"}
		case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
			return parityAnswer{Transport: "eof"}
		}
		t.Fatalf("%s %s: %v", pr.method, pr.target, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return parityAnswer{Status: resp.StatusCode, Body: string(b), ContentType: resp.Header.Values("Content-Type")}
}

// needWireMock returns the wiremock command (npm's wiremock, which runs WireMock's standalone jar on
// java): skipped when it is missing, except under CI, where .ci/run installs it and a missing one fails.
func needWireMock(t *testing.T) string {
	t.Helper()
	for _, tool := range []string{"java", "wiremock"} {
		if _, err := exec.LookPath(tool); err != nil {
			msg := fmt.Sprintf("%s is not installed (apt-get install default-jre-headless; npm install -g wiremock)", tool)
			if os.Getenv("CI") != "" {
				t.Fatal(msg + ": CI must have it")
			}
			t.Skip(msg)
		}
	}
	p, _ := exec.LookPath("wiremock")
	return p
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startWireMock runs the real WireMock over root and returns its base URL once its admin API answers.
func startWireMock(t *testing.T, root string) string {
	t.Helper()
	bin := needWireMock(t)
	port := freePort(t)
	var out bytes.Buffer
	cmd := exec.Command(bin, "--port", fmt.Sprint(port), "--bind-address", "127.0.0.1", "--root-dir", root,
		"--disable-banner", "--local-response-templating")
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	})
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	deadline := time.Now().Add(90 * time.Second)
	for {
		resp, err := http.Get(base + "/__admin/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return base
			}
		}
		select {
		case <-done:
			t.Fatalf("wiremock exited before answering:\n%s", out.String())
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("wiremock did not answer on %s within 90s:\n%s", base, out.String())
		}
	}
}

// wireMockChoice asks WireMock which stub answered the last request or, when none did, which stub it
// named closest (the first of its near misses); the request journal is cleared before each request.
func wireMockChoice(t *testing.T, base string) (matched bool, id string) {
	t.Helper()
	var journal struct {
		Requests []struct {
			WasMatched  bool `json:"wasMatched"`
			StubMapping struct {
				ID string `json:"id"`
			} `json:"stubMapping"`
		} `json:"requests"`
	}
	getJSON(t, base+"/__admin/requests", &journal)
	if len(journal.Requests) != 1 {
		t.Fatalf("wiremock journal holds %d requests, want 1", len(journal.Requests))
	}
	if r := journal.Requests[0]; r.WasMatched {
		return true, r.StubMapping.ID
	}
	var near struct {
		NearMisses []struct {
			StubMapping struct {
				ID string `json:"id"`
			} `json:"stubMapping"`
		} `json:"nearMisses"`
	}
	getJSON(t, base+"/__admin/requests/unmatched/near-misses", &near)
	if len(near.NearMisses) == 0 {
		return false, ""
	}
	return false, near.NearMisses[0].StubMapping.ID
}

func getJSON(t *testing.T, u string, v any) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("%s: %v", u, err)
	}
}

func clearJournal(t *testing.T, base string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodDelete, base+"/__admin/requests", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
}

// TestWireMockParity serves testdata/parity with the real WireMock and with the kit and sends both the same
// requests: the status, the body, the Content-Type (or the connection failure), and the stub that answered
// (or, unmatched, the closest stub) must be the same.
func TestWireMockParity(t *testing.T) {
	if testing.Short() {
		t.Skip("starts WireMock (java)")
	}
	root, err := filepath.Abs("testdata/parity")
	if err != nil {
		t.Fatal(err)
	}
	wm := startWireMock(t, root)
	set, err := Load(root)
	if err != nil {
		t.Fatal(err)
	}
	kit := httptest.NewServer(set)
	defer kit.Close()
	judge, err := Load(root) // a second copy answers "which stub" without serving
	if err != nil {
		t.Fatal(err)
	}
	for _, pr := range parityRequests {
		name := pr.method + " " + pr.target
		clearJournal(t, wm)
		want := send(t, wm, pr)
		matched, wantID := wireMockChoice(t, wm)
		got := send(t, kit.URL, pr)
		if !matched && want.Status == http.StatusNotFound && got.Status == http.StatusNotFound {
			// Unmatched: both answer 404; the texts differ by design (WireMock draws a diff table, the
			// kit names the closest stub in a line), and the closest stub is compared below.
			got, want = parityAnswer{Status: 404}, parityAnswer{Status: 404}
		}
		if got.String() != want.String() {
			t.Errorf("%s: the kit answered %s, WireMock %s", name, got, want)
		}
		u, _ := url.Parse(pr.target)
		h := http.Header{}
		for k, v := range pr.header {
			h.Set(k, v)
		}
		r := &Request{Method: pr.method, URL: u, Header: h, Body: []byte(pr.body)}
		var gotID string
		if m := judge.Match(r); m != nil {
			gotID = m.ID
			if !matched {
				t.Errorf("%s: the kit matched %s, WireMock matched nothing", name, m.Where())
			}
		} else {
			near, _ := judge.Nearest(r)
			gotID = near.ID
			if matched {
				t.Errorf("%s: the kit matched nothing, WireMock matched %s", name, wantID)
			}
		}
		if gotID != wantID {
			t.Errorf("%s: the kit chose %s, WireMock %s (matched: %v)", name, nameOf(set, gotID), nameOf(set, wantID), matched)
		}
	}
}

func nameOf(s *Set, id string) string {
	for _, m := range s.Mappings() {
		if m.ID == id {
			return m.Name
		}
	}
	return id
}
