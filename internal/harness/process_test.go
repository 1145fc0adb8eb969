package harness

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// fake returns the path of a stand-in interpreter under testdata/fakepython.
func fake(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("testdata", "fakepython", name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func testLimits() Limits {
	l := DefaultLimits()
	l.Grace = time.Second
	l.StartTimeout = 10 * time.Second
	l.CloseTimeout = time.Second
	return l
}

// startFake starts the scripted fake harness.
func startFake(t *testing.T, o Options) *Process {
	skipShort(t)
	t.Helper()
	if o.Python == "" {
		o.Python = fake(t, "fake-harness")
	}
	if o.ProjectDir == "" {
		o.ProjectDir = t.TempDir()
	}
	if o.Limits == (Limits{}) {
		o.Limits = testLimits()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	p, err := Start(ctx, o)
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() { p.Kill() })
	return p
}

// assertGone checks that nothing of p is left: no member of its process
// group and no process carrying its replica token.
func assertGone(t *testing.T, pgid int, token string) {
	t.Helper()
	var left []int
	for end := time.Now().Add(leftoverBound); ; time.Sleep(20 * time.Millisecond) {
		if left = strays(pgid, token, 0); len(left) == 0 {
			return
		}
		if time.Now().After(end) {
			break
		}
	}
	t.Fatalf("processes left behind after %s: %v", leftoverBound, left)
}

func asProcessError(t *testing.T, err error, kind ErrorKind, text ...string) *ProcessError {
	t.Helper()
	var pe *ProcessError
	if !errors.As(err, &pe) {
		t.Fatalf("error %v (%T) is not a *ProcessError", err, err)
	}
	if pe.Kind != kind {
		t.Fatalf("kind %q, want %q; error: %v", pe.Kind, kind, err)
	}
	for _, s := range text {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error does not mention %q:\n%v", s, err)
		}
	}
	return pe
}

func call(t *testing.T, p *Process, method string, args any, timeout time.Duration) (*Reply, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return p.Call(ctx, method, args, timeout)
}

func TestStartFailures(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python (skipped under -short)")
	}
	skipShort(t)
	short := testLimits()
	short.StartTimeout = 700 * time.Millisecond
	tests := []struct {
		name   string
		python string
		env    []string
		limits Limits
		kind   ErrorKind
		text   []string
	}{
		{"not python", "not-python", nil, Limits{}, KindExited, []string{"status 3", "not-python: unknown option -B", "Python 3.9+"}},
		{"exits at once", "exits-at-once", nil, Limits{}, KindExited, []string{"status 0", "before the harness handshake"}},
		{"no hello", "silent", nil, short, KindHung, []string{"no hello from the harness within 700ms"}},
		{"wrong version", "fake-harness", []string{"FAKE_MODE=wrong-version"}, Limits{}, KindProtocol, []string{"protocol 99", "speaks 1"}},
		{"wrong cookie", "fake-harness", []string{"FAKE_MODE=wrong-cookie"}, Limits{}, KindProtocol, []string{"wrong cookie"}},
		{"garbage", "fake-harness", []string{"FAKE_MODE=garbage-hello"}, Limits{}, KindProtocol, []string{"protocol corrupted", "larger than 64 MiB"}},
		{"kind not a string", "fake-harness", []string{"FAKE_MODE=kind-number-hello"}, Limits{}, KindProtocol, []string{"protocol corrupted", "not a JSON object with a kind", "cannot unmarshal number"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			lim := tc.limits
			if lim == (Limits{}) {
				lim = testLimits()
			}
			mark := "ASTRABOX_TEST_MARK=" + randomHex(8)
			env := append([]string{mark}, tc.env...)
			p, err := Start(context.Background(), Options{Python: fake(t, tc.python), ProjectDir: t.TempDir(), Env: env, Limits: lim, Replica: "r9"})
			if err == nil {
				p.Kill()
				t.Fatal("start succeeded")
			}
			pe := asProcessError(t, err, tc.kind, tc.text...)
			if pe.Replica != "r9" || !strings.Contains(err.Error(), "harness r9") {
				t.Errorf("replica not named: %v", err)
			}
			if left := pidsWithEnv(mark); len(left) > 0 {
				t.Errorf("processes left behind: %v", left)
			}
		})
	}
	t.Run("missing interpreter", func(t *testing.T) {
		_, err := Start(context.Background(), Options{Python: filepath.Join(t.TempDir(), "nope"), ProjectDir: t.TempDir()})
		asProcessError(t, err, KindStart, "python could not be started", "nope")
	})
	t.Run("cancelled", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		_, err := Start(ctx, Options{Python: fake(t, "silent"), ProjectDir: t.TempDir()})
		asProcessError(t, err, KindClosed, "start cancelled", "deadline exceeded")
	})
}

// pidsWithEnv lists live processes whose environment holds kv.
func pidsWithEnv(kv string) []int {
	var out []int
	self := os.Getpid()
	for _, pid := range allPids() {
		if pid == self {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", itoa(pid), "environ"))
		if err == nil && strings.Contains("\x00"+string(b), "\x00"+kv+"\x00") {
			if info, ok := readStat(pid); ok && info.state != 'Z' {
				out = append(out, pid)
			}
		}
	}
	return out
}

func TestFakeRoundTripAndAttribution(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python (skipped under -short)")
	}
	p := startFake(t, Options{})
	if p.Hello().Protocol != 1 || p.Hello().PID != p.PID() || !p.Alive() {
		t.Fatalf("hello %+v, pid %d", p.Hello(), p.PID())
	}
	r, err := call(t, p, "echo", map[string]any{"x": 1}, time.Second)
	if err != nil || !r.OK {
		t.Fatalf("echo: %v %+v", err, r)
	}
	res, err := r.Result()
	if err != nil || res.Type != KindOther || res.Repr != `{"x": 1}` {
		t.Fatalf("result %+v %v", res, err)
	}
	r1, err := call(t, p, "print", map[string]string{"out": "one out", "err": "one err"}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := call(t, p, "print", map[string]string{"out": "two out"}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if r1.Stdout.String() != "one out" || r1.Stderr.String() != "one err" {
		t.Errorf("call 1 output %q %q", r1.Stdout.String(), r1.Stderr.String())
	}
	if r2.Stdout.String() != "two out" || r2.Stderr.String() != "" {
		t.Errorf("call 2 output %q %q", r2.Stdout.String(), r2.Stderr.String())
	}
	r3, err := call(t, p, "raise", nil, time.Second)
	if err != nil || r3.OK || r3.Error == nil || r3.Error.Type != "ValueError" || len(r3.Error.Frames) != 1 {
		t.Fatalf("raise: %v %+v", err, r3)
	}
	if _, err := r3.Result(); err == nil || !strings.Contains(err.Error(), "ValueError: boom") {
		t.Errorf("Result of a failed call: %v", err)
	}
	// A reply without markers still returns, with the output cut where it stood.
	r4, err := call(t, p, "nomarker", nil, time.Second)
	if err != nil || r4.Stdout.String() != "unmarked" {
		t.Fatalf("nomarker: %v %q", err, r4.Stdout.String())
	}
	r5, err := call(t, p, "background", nil, time.Second)
	if err != nil || !r5.OK {
		t.Fatal(err)
	}
	bg := p.Background()
	if len(bg.Logs) != 1 || bg.Logs[0].Message != "late" || !bg.Logs[0].AfterReturn {
		t.Errorf("background %+v", bg)
	}
	if again := p.Background(); !again.Empty() {
		t.Errorf("background not drained: %+v", again)
	}
	pgid, token := p.PID(), p.ReplicaToken()
	if err := p.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if err := p.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
	if p.Alive() {
		t.Error("alive after close")
	}
	_, err = call(t, p, "echo", nil, time.Second)
	asProcessError(t, err, KindClosed, "process is closed")
	assertGone(t, pgid, token)
}

func TestFakeCancelAndHang(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python (skipped under -short)")
	}
	p := startFake(t, Options{})
	r, err := call(t, p, "cancellable", nil, 100*time.Millisecond)
	if err != nil || !r.CancelSent || r.OK || !r.Error.Cancelled {
		t.Fatalf("cancellable: %v %+v", err, r)
	}
	// Context cancellation takes the same path.
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	r, err = p.Call(ctx, "cancellable", nil, 0)
	if err != nil || !r.CancelSent || !r.Error.Cancelled {
		t.Fatalf("cancellable by ctx: %v %+v", err, r)
	}
	pgid, token := p.PID(), p.ReplicaToken()
	_, err = call(t, p, "block_forever", nil, 100*time.Millisecond)
	pe := asProcessError(t, err, KindHung, "did not settle", "call block_forever", "within 1s after cancel")
	if !strings.Contains(pe.Stack, "most recent call first") || !strings.Contains(pe.Stack, "fake-harness") {
		t.Errorf("stack dump missing: %q", pe.Stack)
	}
	if pe.Signal != "SIGKILL" {
		t.Errorf("signal %q", pe.Signal)
	}
	_, err = call(t, p, "echo", nil, time.Second)
	asProcessError(t, err, KindClosed, "died earlier", "did not settle")
	assertGone(t, pgid, token)
	if err := p.Close(); err != nil {
		t.Errorf("close after a reported death: %v", err)
	}
}

func TestFakeDeaths(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python (skipped under -short)")
	}
	tests := []struct {
		method string
		args   any
		kind   ErrorKind
		text   []string
	}{
		{"exit", map[string]int{"status": 7}, KindExited, []string{"call exit", "exited with status 7"}},
		{"garbage", nil, KindProtocol, []string{"protocol corrupted", "larger than 64 MiB"}},
		{"close_reply_channel", nil, KindProtocol, []string{"closed its reply channel"}},
	}
	for _, tc := range tests {
		t.Run(tc.method, func(t *testing.T) {
			p := startFake(t, Options{})
			pgid, token := p.PID(), p.ReplicaToken()
			_, err := call(t, p, tc.method, tc.args, 5*time.Second)
			asProcessError(t, err, tc.kind, tc.text...)
			if p.Alive() {
				t.Error("alive after a fatal error")
			}
			_, err = call(t, p, "echo", nil, time.Second)
			asProcessError(t, err, KindClosed)
			assertGone(t, pgid, token)
		})
	}
}

type fakeSandbox struct {
	mu    sync.Mutex
	files map[string][]byte
	reqs  []SandboxRequest
}

func (f *fakeSandbox) Sandbox(ctx context.Context, r SandboxRequest) SandboxResponse {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reqs = append(f.reqs, r)
	switch r.Op {
	case OpWriteFile:
		f.files[r.Path] = r.Content
		return SandboxResponse{OK: true}
	case OpReadFile:
		c, ok := f.files[r.Path]
		if !ok {
			return SandboxResponse{Error: &SandboxError{Type: "FileNotFoundError", Message: r.Path}}
		}
		return SandboxResponse{OK: true, Value: ReadFileValue(c)}
	}
	return SandboxResponse{Error: &SandboxError{Type: "OSError", Message: "unsupported"}}
}

func TestFakeSandboxRoundTrip(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python (skipped under -short)")
	}
	sb := &fakeSandbox{files: map[string][]byte{}}
	p := startFake(t, Options{Sandbox: sb})
	r, err := call(t, p, "sandbox", nil, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	res, _ := r.Result()
	var got []map[string]any
	if err := json.Unmarshal([]byte(res.Repr), &got); err != nil {
		t.Fatalf("repr %q: %v", res.Repr, err)
	}
	if len(got) != 2 || got[0]["kind"] != "sandbox_reply" || got[0]["ok"] != true || got[0]["id"] != float64(1) {
		t.Fatalf("write reply %v", got)
	}
	v, _ := got[1]["value"].(map[string]any)
	if v["content_b64"] != "aGkA" {
		t.Fatalf("read reply %v", got[1])
	}
	if len(sb.reqs) != 2 || string(sb.reqs[0].Content) != "hi\x00" || sb.reqs[0].Mode == nil || *sb.reqs[0].Mode != 0o600 || sb.reqs[0].Call != r.ID {
		t.Fatalf("requests %+v", sb.reqs)
	}
}

// leftoverBound bounds the tests' waits for what a closed process leaves to wind down (its supervisor's
// goroutines, strays): the kit's own bounds on that end (waitLoop waits treeBound for the supervisor to report
// the tree gone, sweeps for at most goneBound, and waits treeBound again), not a guess of how fast a quiet
// machine is. The supervisor's goroutines end when it is reaped, which Close waits for only that long: a
// fixed two seconds was shorter than the kit's own bound, so a loaded machine could fail a test with no leak.
const leftoverBound = 2*treeBound + goneBound

// noLeaks checks, when t ends (after the cleanups registered later, which
// run first), that the goroutine count is back to where it was.
func noLeaks(t *testing.T) {
	t.Helper()
	base := runtime.NumGoroutine()
	t.Cleanup(func() {
		var n int
		for end := time.Now().Add(leftoverBound); ; time.Sleep(20 * time.Millisecond) {
			if n = runtime.NumGoroutine(); n <= base {
				return
			}
			if time.Now().After(end) {
				break
			}
		}
		buf := make([]byte, 1<<16)
		t.Errorf("goroutine leak: %d before, %d after %s:\n%s", base, n, leftoverBound, buf[:runtime.Stack(buf, true)])
	})
}

func TestCloseAndKillAreIdempotentAndLeakFree(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python (skipped under -short)")
	}
	base := runtime.NumGoroutine()
	for i := 0; i < 3; i++ {
		p := startFake(t, Options{})
		if _, err := call(t, p, "print", map[string]string{"out": "x"}, time.Second); err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			p.Kill()
			p.Kill()
			if err := p.Close(); err != nil {
				t.Errorf("close after kill: %v", err)
			}
		} else {
			p.Close()
			p.Kill()
		}
		assertGone(t, p.PID(), p.ReplicaToken())
	}
	var n int
	for i := 0; i < 100; i++ {
		if n = runtime.NumGoroutine(); n <= base {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	buf := make([]byte, 1<<16)
	t.Fatalf("%d goroutines before, %d after:\n%s", base, n, buf[:runtime.Stack(buf, true)])
}

func TestKillDuringCall(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python (skipped under -short)")
	}
	p := startFake(t, Options{})
	time.AfterFunc(200*time.Millisecond, p.Kill)
	_, err := call(t, p, "block_forever", nil, 0)
	asProcessError(t, err, KindClosed, "closed by the host")
	assertGone(t, p.PID(), p.ReplicaToken())
}
