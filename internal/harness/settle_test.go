package harness

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func settleProvider(t *testing.T) (*Process, string) {
	t.Helper()
	dir, _ := filepath.Abs(filepath.Join("testdata", "good"))
	p, _ := startLoaded(t, dir, "settle_provider:Provider", Options{Python: "python3"})
	return p, dir
}

func attemptArgs(dir, attempt string) map[string]any {
	a := turnArgs(dir)
	a["context"].(map[string]any)["dispatch_attempt_id"] = attempt
	return a
}

// TestSettleWaitsForEveryKindOfLeftoverWork leaves a thread, a threading.Timer, an executor job, an asyncio
// task and a loop timer behind a call, and requires settle to wait for each and to return its output.
func TestSettleWaitsForEveryKindOfLeftoverWork(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python")
	}
	p, dir := settleProvider(t)
	ctx := context.Background()
	for kind, want := range map[string]string{"thread": "thread-late", "timer": "timer-late", "pool": "pool-late", "task": "task-late", "call_later": "call-later-late"} {
		id := p.NextCallID()
		rep, err := p.Call(ctx, "prepare_turn", attemptArgs(dir, kind), 10*time.Second)
		if err != nil || !rep.OK {
			t.Fatalf("%s: %v %v", kind, err, rep)
		}
		if rep.Observations.Leftovers.Empty() {
			t.Fatalf("%s: no leftovers reported", kind)
		}
		srep, res, err := p.Settle(ctx, []int64{id}, 5*time.Second)
		if err != nil {
			t.Fatalf("%s: settle: %v", kind, err)
		}
		if !res.Settled || !res.Remaining.Empty() {
			t.Errorf("%s: not settled: %+v", kind, res)
		}
		if !strings.Contains(srep.Stdout.String()+rep.Stdout.String(), want) {
			t.Errorf("%s: output %q not collected by settling", kind, srep.Stdout.String())
		}
	}
}

// TestSettleIsBounded requires settle to give up after its bound on work that runs on, and to say what runs.
func TestSettleIsBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python")
	}
	p, dir := settleProvider(t)
	ctx := context.Background()
	id := p.NextCallID()
	if _, err := p.Call(ctx, "prepare_turn", attemptArgs(dir, "forever"), 10*time.Second); err != nil {
		t.Fatal(err)
	}
	_, res, err := p.Settle(ctx, []int64{id}, 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if res.Settled || len(res.Remaining.Threads) != 1 || res.WaitedS < 0.3 {
		t.Errorf("settle of a thread that sleeps 30 s: %+v", res)
	}
	// Work of another call is not waited for.
	_, res, err = p.Settle(ctx, []int64{id + 100}, 2*time.Second)
	if err != nil || !res.Settled || res.WaitedS > 0.5 {
		t.Errorf("settle of a call that left nothing: %+v %v", res, err)
	}
}

// TestSystemExitEndsTheProcess requires a callback's SystemExit to be replied with its exit status and then
// to end the process with it, as on the platform's asyncio host.
func TestSystemExitEndsTheProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python")
	}
	p, dir := settleProvider(t)
	rep, err := p.Call(context.Background(), "prepare_turn", attemptArgs(dir, "exit"), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Exit == nil || rep.Exit.Exception != ExitSystemExit || rep.Exit.Code != 7 || rep.Error == nil || rep.Error.Type != "SystemExit" {
		t.Fatalf("reply: exit %+v error %+v", rep.Exit, rep.Error)
	}
	if !p.WaitExit(5 * time.Second) {
		t.Fatal("the process did not end after SystemExit")
	}
	if p.Alive() {
		t.Fatal("the process is still alive")
	}
}

// TestPlanNameResolutionAndListingsAreAudited requires each name resolution, reverse lookup and directory
// listing made by plan to be observed as an audit event of plan.
func TestPlanNameResolutionAndListingsAreAudited(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python")
	}
	p, _ := settleProvider(t)
	for io, event := range map[string]string{
		"getfqdn": "socket.gethostbyaddr", "gethostbyaddr": "socket.gethostbyaddr", "gethostbyname": "socket.gethostbyname",
		"getnameinfo": "socket.getnameinfo", "getaddrinfo": "socket.getaddrinfo", "listdir": "os.listdir", "scandir": "os.scandir",
	} {
		rep, err := p.Call(context.Background(), "plan", map[string]any{"config": map[string]any{"io": io}}, 10*time.Second)
		if err != nil || !rep.OK {
			t.Fatalf("%s: %v %+v", io, err, rep)
		}
		found := false
		for _, a := range rep.Observations.Audit {
			if a.Event == event && strings.HasSuffix(a.File, "settle_provider/__init__.py") {
				found = true
			}
		}
		if !found {
			t.Errorf("plan doing %s: no %s audit event located in the provider: %+v", io, event, rep.Observations.Audit)
		}
	}
	// Imports list directories too; those are not the provider's I/O.
	rep, err := p.Call(context.Background(), "plan", map[string]any{"config": map[string]any{}}, 10*time.Second)
	if err != nil || len(rep.Observations.Audit) != 0 {
		t.Errorf("plan without I/O observed %+v (%v)", rep.Observations.Audit, err)
	}
}

// TestMaterialContentOfTheWrongTypeIsTyped requires a RuntimeFile whose content is not bytes to be reported
// as a typed error, not as an empty file.
func TestMaterialContentOfTheWrongTypeIsTyped(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python")
	}
	p, dir := settleProvider(t)
	rep, err := p.Call(context.Background(), "prepare_session", sessionArgs(dir), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	res, err := rep.Result()
	if err != nil {
		t.Fatal(err)
	}
	want := []TypeError{{Field: "files[0].content", Expected: "bytes", Got: "str"}, {Field: "files[1].content", Expected: "bytes", Got: "NoneType"}}
	if len(res.TypeErrors) != 2 || res.TypeErrors[0] != want[0] || res.TypeErrors[1] != want[1] {
		t.Errorf("type errors %+v, want %+v", res.TypeErrors, want)
	}
}

// TestSettleStopsWaitingForAnIdleChild: a child process a call left running that sleeps with no CPU, no
// child and no socket of its own (an unwaited `sleep`) is not waited for past the idle window, and is marked
// idle; a child that burns CPU, or a script asleep in a child of its own, is waited for as work.
func TestSettleStopsWaitingForAnIdleChild(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python")
	}
	p, dir := settleProvider(t)
	ctx := context.Background()
	settle := func(kind string, bound time.Duration) *SettleResult {
		t.Helper()
		id := p.NextCallID()
		rep, err := p.Call(ctx, "prepare_turn", attemptArgs(dir, kind), 10*time.Second)
		if err != nil || !rep.OK || len(rep.Observations.Leftovers.Children) != 1 {
			t.Fatalf("%s: %v %+v", kind, err, rep)
		}
		_, res, err := p.Settle(ctx, []int64{id}, bound)
		if err != nil {
			t.Fatalf("%s: settle: %v", kind, err)
		}
		return res
	}
	res := settle("idle-child", 20*time.Second)
	if res.Settled || len(res.Remaining.Children) != 1 || !res.Remaining.Children[0].Idle ||
		!strings.Contains(res.Remaining.Children[0].Cmdline, "sleep 30") || res.WaitedS >= 20 {
		t.Errorf("an idle child was waited for as work (or not reported): %+v", res)
	}
	res = settle("busy-child", 1500*time.Millisecond)
	if res.Settled || len(res.Remaining.Children) != 1 || res.Remaining.Children[0].Idle {
		t.Errorf("a child burning CPU was taken for idle: %+v", res)
	}
	res = settle("script-child", 20*time.Second)
	if !res.Settled {
		t.Errorf("a script asleep in its own child was not waited for: %+v", res)
	}
}
