package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

// These tests run the real embedded harness with python3 from PATH.

func fixtureDir(t *testing.T, parts ...string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join(append([]string{"testdata"}, parts...)...))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// startLoaded starts the harness in project dir and loads target from dir/src.
func startLoaded(t *testing.T, dir, target string, o Options) (*Process, *LoadInfo) {
	skipShort(t)
	t.Helper()
	o.ProjectDir = dir
	if o.Limits == (Limits{}) {
		o.Limits = testLimits()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := Start(ctx, o)
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() { p.Kill() })
	r, err := p.Load(ctx, LoadArgs{Target: target, Paths: []string{filepath.Join(dir, "src")}, ProjectRoot: dir, ForceDebugLogging: true})
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	li, err := r.LoadInfo()
	if err != nil {
		t.Fatalf("load %s: %v\n%s", target, err, r.Stderr.String())
	}
	return p, li
}

func sessionArgs(dir string) map[string]any {
	return map[string]any{"context": map[string]any{
		"session_id": "s-1", "agent_id": "a-1", "principal_id": "u-1",
		"config": map[string]any{"region": "eu"}, "runtime_generation": "g-1", "sandbox_id": "sb-1",
		"workload_identity": map[string]any{"subject": "wl", "token": "wl-token"},
		"trigger":           "cold_start", "file_paths_dir": dir,
	}}
}

func turnArgs(dir string) map[string]any {
	return map[string]any{"context": map[string]any{
		"session_id": "s-1", "agent_id": "a-1", "principal_id": "u-1", "dispatch_attempt_id": "d-7",
		"runtime_generation": "g-1", "deadline": float64(time.Now().Add(time.Minute).Unix()), "refresh": false,
		"sandbox_handle": map[string]any{"sandbox_id": "sb-1", "home": "/home/workload", "workspace": "/workspace"},
		"file_paths_dir": dir,
	}}
}

func TestHarnessByHand(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python (skipped under -short)")
	}
	skipShort(t)
	sdk, err := SDKDir()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("python3", filepath.Join(sdk, "astrabox", "_harness", "__main__.py"))
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	out, err := cmd.CombinedOutput()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 1 {
		t.Fatalf("by-hand run: %v, want exit status 1; output:\n%s", err, out)
	}
	for _, want := range []string{"This is the astrabox provider harness", "astrabox conformance run"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("by-hand output lacks %q:\n%s", want, out)
		}
	}
}

func TestHarnessLoadAndCalls(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python (skipped under -short)")
	}
	dir := fixtureDir(t, "good")
	sb := &fakeSandbox{files: map[string][]byte{}}
	var verbose syncBuffer
	lim := testLimits()
	lim.OpenFiles = 512
	lim.AddressSpace = 3 << 30
	p, li := startLoaded(t, dir, "good_provider.provider:Provider", Options{Sandbox: sb, Replica: "r2", Verbose: &verbose, Limits: lim})
	if h := p.Hello(); h.Protocol != 1 || h.Implementation != "cpython" || len(h.Python) != 3 || h.Python[0] != 3 {
		t.Errorf("hello %+v", h)
	}
	if !li.IsSubclass || !li.Instantiated || li.Name == nil || *li.Name != "good" || li.Qualname != "Provider" {
		t.Errorf("load info %+v", li)
	}
	if len(li.Methods) != 7 || !li.Methods["prepare_turn"].Overridden || !li.Methods["prepare_turn"].Async ||
		li.Methods["synchronize"].Overridden || !strings.HasSuffix(li.ModuleFile, "provider.py") {
		t.Errorf("methods %+v module %s", li.Methods, li.ModuleFile)
	}

	r, err := call(t, p, "plan", map[string]any{"config": map[string]any{"region": "eu"}}, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Result()
	if err != nil || res.Type != KindPlan || !res.SessionBound {
		t.Fatalf("plan %+v %v (%s)", res, err, r.Value)
	}
	var decl, want any
	json.Unmarshal(res.Declaration, &decl)
	json.Unmarshal([]byte(`{"region":"eu","limits":{"nofile":512,"as":3221225472,"core":0}}`), &want)
	if !reflect.DeepEqual(decl, want) {
		t.Errorf("declaration (region, and the limits the harness set) %s", res.Declaration)
	}
	if r.Stdout.String() != "plan stdout\n" {
		t.Errorf("plan stdout %q", r.Stdout.String())
	}

	files := t.TempDir()
	r, err = call(t, p, "prepare_session", sessionArgs(files), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	res, err = r.Result()
	if err != nil || res.Type != KindMaterials || len(res.Files) != 1 || string(res.Files[0].Content) != `{"t": 1}` ||
		res.Environment["GOOD_TOKEN_PATH"] != files+"/token.json" {
		t.Fatalf("session %+v %v (%s)", res, err, r.Value)
	}
	if r.Stdout.String() != "session stdout for s-1\n" || r.Stderr.String() != "session stderr\n" {
		t.Errorf("session output %q / %q", r.Stdout.String(), r.Stderr.String())
	}
	found := false
	for _, l := range r.Observations.Logs {
		if l.Logger == "good_provider" && l.Message == "preparing session s-1" && l.Call != nil && *l.Call == r.ID {
			found = true
		}
	}
	if !found {
		t.Errorf("log record missing: %+v", r.Observations.Logs)
	}

	r, err = call(t, p, "prepare_turn", turnArgs(files), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	res, err = r.Result()
	if err != nil || res.Environment["BACK"] != "turn d-7" || string(res.TurnValiditySeconds) != "300.0" && string(res.TurnValiditySeconds) != "300" {
		t.Fatalf("turn %+v %v (%s)", res, err, r.Value)
	}
	if got := string(sb.files["/home/workload/marker"]); got != "turn d-7" {
		t.Errorf("sandbox file %q", got)
	}
	if r.Stdout.String() != "turn read back turn d-7\n" {
		t.Errorf("turn stdout %q", r.Stdout.String())
	}
	if len(sb.reqs) != 3 || sb.reqs[2].Op != OpReadFile || sb.reqs[0].Call != r.ID || sb.reqs[0].SandboxID != "sb-1" {
		t.Errorf("sandbox requests %+v", sb.reqs)
	}

	r, err = call(t, p, "recover", map[string]any{"operation": map[string]any{"agent_id": "a-1", "operation_id": "op-9", "deadline": 1e10}}, 5*time.Second)
	if err != nil || r.OK || r.Error == nil || r.Error.Type != "RuntimeError" || r.Error.Message != "cannot recover op-9" {
		t.Fatalf("recover: %v %+v", err, r)
	}
	if len(r.Error.Frames) == 0 || !strings.HasSuffix(r.Error.Frames[len(r.Error.Frames)-1].File, "provider.py") {
		t.Errorf("frames %+v", r.Error.Frames)
	}
	// An async callback past its deadline is cancelled and replies.
	uctx := map[string]any{"context": map[string]any{"session_id": "slow", "owner_id": "u-1", "agent_id": "a-1"}}
	r, err = call(t, p, "read_user_actions", uctx, 200*time.Millisecond)
	if err != nil || !r.CancelSent || !r.CancelReceived || r.OK || r.Error == nil || !r.Error.Cancelled {
		t.Fatalf("cancelled call: %v %+v", err, r)
	}
	if r.HeldPastDeadline {
		t.Errorf("a callback awaiting at its deadline is said to hold the loop: %+v", r)
	}
	// Synchronous code cannot receive the cancel: it was sent, but not received, and the harness says the
	// callback held the loop through its deadline.
	r, err = call(t, p, "plan", map[string]any{"config": map[string]any{"sleep": 0.3}}, 50*time.Millisecond)
	if err != nil || !r.OK || !r.CancelSent || r.CancelReceived || !r.HeldPastDeadline {
		t.Fatalf("plan past its deadline: %v %+v", err, r)
	}
	uctx = map[string]any{"context": map[string]any{"session_id": "holds-loop", "owner_id": "u-1", "agent_id": "a-1"}}
	r, err = call(t, p, "read_user_actions", uctx, 50*time.Millisecond)
	if err != nil || !r.OK || !r.CancelSent || r.CancelReceived || !r.HeldPastDeadline {
		t.Fatalf("an async callback holding the loop past its deadline: %v %+v", err, r)
	}
	// A cancel that a loaded machine delivers late (held back here) finds the callback done: the loop was
	// free when the deadline passed, so the reply crossed the cancel, however long the callback took.
	BeforeCancel = holdCancelUntilReplied
	uctx = map[string]any{"context": map[string]any{"session_id": "yields-late", "owner_id": "u-1", "agent_id": "a-1"}}
	r, err = call(t, p, "read_user_actions", uctx, 50*time.Millisecond)
	BeforeCancel = nil
	if err != nil || !r.OK || !r.CancelSent || r.CancelReceived || r.HeldPastDeadline || r.Duration < 150*time.Millisecond {
		t.Fatalf("a late cancel: %v %+v", err, r)
	}
	// Work left behind reports through background observations.
	uctx = map[string]any{"context": map[string]any{"session_id": "s-1", "owner_id": "u-1", "agent_id": "a-1"}, "action_id": "check"}
	r, err = call(t, p, "perform_user_action", uctx, 5*time.Second)
	if err != nil || !r.OK {
		t.Fatalf("perform_user_action: %v %+v", err, r)
	}
	var late *LogRecord
	for i := 0; i < 100 && late == nil; i++ {
		for _, l := range p.Background().Logs {
			if l.Message == "late log for check" {
				l := l
				late = &l
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	if late == nil || !late.AfterReturn || late.Call == nil || *late.Call != r.ID {
		t.Errorf("late log record %+v", late)
	}
	pgid, token := p.PID(), p.ReplicaToken()
	if err := p.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	assertGone(t, pgid, token)
	for _, want := range []string{"harness r2: started", "harness r2: hello: protocol 1, cpython 3.", "harness r2: call 1 load", "harness r2: shutdown"} {
		if !strings.Contains(verbose.String(), want) {
			t.Errorf("verbose log lacks %q:\n%s", want, verbose.String())
		}
	}
}

// syncBuffer is a bytes.Buffer safe for concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestHarnessPythonVersions runs load, plan and a session call on every
// CPython installed under pyenv (3.9 to 3.13); absent versions are skipped.
func TestHarnessPythonVersions(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python (skipped under -short)")
	}
	skipShort(t)
	dir := fixtureDir(t, "good")
	for _, v := range []string{"3.9.18", "3.10.13", "3.11.7", "3.12.1", "3.13.0"} {
		t.Run(v, func(t *testing.T) {
			py := filepath.Join("/root/.pyenv/versions", v, "bin", "python3")
			if _, err := os.Stat(py); err != nil {
				t.Skipf("%s not installed", py)
			}
			p, li := startLoaded(t, dir, "good_provider.provider:Provider", Options{Python: py})
			if got := p.Hello().PythonVersion(); got != v {
				t.Errorf("hello says python %s", got)
			}
			if !li.Instantiated {
				t.Errorf("load info %+v", li)
			}
			r, err := call(t, p, "prepare_session", sessionArgs(t.TempDir()), 10*time.Second)
			if err != nil || !r.OK || r.Stdout.String() != "session stdout for s-1\n" {
				t.Fatalf("session: %v %+v", err, r)
			}
			pgid, token := p.PID(), p.ReplicaToken()
			if err := p.Close(); err != nil {
				t.Fatal(err)
			}
			assertGone(t, pgid, token)

			// The same through a fork server on this interpreter.
			z, err := StartZygote(context.Background(), py, dir)
			if err != nil {
				t.Fatal(err)
			}
			defer z.Close()
			p, _ = startLoaded(t, dir, "good_provider.provider:Provider", Options{Python: py, Zygote: z})
			if got := p.Hello().PythonVersion(); got != v {
				t.Errorf("forked: hello says python %s", got)
			}
			r, err = call(t, p, "prepare_session", sessionArgs(t.TempDir()), 10*time.Second)
			if err != nil || !r.OK || r.Stdout.String() != "session stdout for s-1\n" {
				t.Fatalf("forked session: %v %+v", err, r)
			}
			pgid, token = p.PID(), p.ReplicaToken()
			if err := p.Close(); err != nil {
				t.Fatal(err)
			}
			assertGone(t, pgid, token)
		})
	}
}

func TestHarnessLoadFailure(t *testing.T) {
	skipShort(t)
	dir := fixtureDir(t, "good")
	ctx := context.Background()
	p, err := Start(ctx, Options{ProjectDir: dir, Limits: testLimits()})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	r, err := p.Load(ctx, LoadArgs{Target: "good_provider.nothere:Provider", Paths: []string{filepath.Join(dir, "src")}, ProjectRoot: dir})
	if err != nil {
		t.Fatal(err)
	}
	if r.OK || r.Error == nil || !strings.Contains(r.Error.Type, "ModuleNotFoundError") {
		t.Fatalf("load of a missing module: %+v", r)
	}
	if _, err := r.LoadInfo(); err == nil || !strings.Contains(err.Error(), "load failed") {
		t.Errorf("LoadInfo of a failed load: %v", err)
	}
}

// holdCancelUntilReplied is a BeforeCancel that holds the cancel back until the reply has been read (at most
// 30 s): the cancel then reaches the harness after the callback ended, as on a loaded machine.
func holdCancelUntilReplied(replied func() bool) {
	for end := time.Now().Add(30 * time.Second); !replied() && time.Now().Before(end); {
		time.Sleep(5 * time.Millisecond)
	}
}
