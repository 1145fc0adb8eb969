package cli

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/astrabox-dev/astrabox/internal/stubs"
)

func TestStubsServeOptions(t *testing.T) {
	var got *StubsServeOptions
	runF := func(o *StubsServeOptions) error { got = o; return nil }
	build := func(f *Factory) *cobra.Command { return NewCmdStubsServe(f, runF) }
	if err, _, _ := execute(t, build, "stubs/vault"); err != nil || got.Dir != "stubs/vault" || got.Port != DefaultStubsPort || got.Host != "127.0.0.1" {
		t.Fatalf("defaults: err %v, options %+v", err, got)
	}
	if err, _, _ := execute(t, build, "--port", "0", "--host", "0.0.0.0", "d"); err != nil || got.Port != 0 || got.Host != "0.0.0.0" {
		t.Fatalf("flags: err %v, options %+v", err, got)
	}
	for _, args := range [][]string{{"--port", "70000", "d"}, {"--port", "-1", "d"}, {"--host", "", "d"}, {}, {"a", "b"}} {
		got = nil
		err, _, _ := execute(t, build, args...)
		if err == nil || got != nil || exitCode(err) != ExitUndecided {
			t.Errorf("%q: err %v (exit %d), ran %v", args, err, exitCode(err), got != nil)
		}
	}
}

// syncBuffer is a log the server goroutines and the test share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// TestStubsServeAnswersAndLogs serves the stubs package's parity mappings and asks for a matched, an
// unmatched and a faulty request: each is answered as during a run and logged with its outcome.
func TestStubsServeAnswersAndLogs(t *testing.T) {
	set, err := stubs.Load("../stubs/testdata/parity")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var log syncBuffer
	done := make(chan error, 1)
	go func() { done <- serveStubs(ctx, set, ln, &log) }()
	base := "http://" + ln.Addr().String()
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}
	get := func(path string) (int, string) {
		resp, err := client.Get(base + path)
		if err != nil {
			return -1, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/users/7"); code != 200 || body != "user" {
		t.Errorf("GET /users/7 = %d %q", code, body)
	}
	if code, body := get("/user/7"); code != 404 || !strings.Contains(body, `"get-admin"`) {
		t.Errorf("GET /user/7 = %d %q, want 404 naming the closest stub get-admin", code, body)
	}
	if code, _ := get("/flaky/reset"); code != -1 {
		t.Errorf("GET /flaky/reset answered %d", code)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serveStubs = %v after the context ended", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serveStubs did not return after the context ended")
	}
	for _, want := range []string{"GET /users/7 -> 200\n", "GET /user/7 -> 404\n", "GET /flaky/reset -> fault"} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, log.String())
		}
	}
}
