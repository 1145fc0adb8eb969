package harness

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"
)

func startZygote(t *testing.T) *Zygote {
	skipShort(t)
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	z, err := StartZygote(ctx, "python3", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		pid := z.pid
		z.Close()
		if alive(pid) {
			t.Errorf("the fork server %d outlived Close", pid)
		}
	})
	return z
}

// TestZygoteForkedHarness: a forked harness is a harness like a started one: its own process group and
// environment, the provider loaded, output captured and cut per call, and nothing left when it is killed.
func TestZygoteForkedHarness(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python (skipped under -short)")
	}
	z := startZygote(t)
	p, li := startLoaded(t, fixtureDir(t, "good"), "good_provider.provider:Provider", Options{Zygote: z, Replica: "r7"})
	if !li.Instantiated {
		t.Fatalf("load info %+v", li)
	}
	if p.PID() == z.pid || p.Hello().PID != p.PID() {
		t.Fatalf("pid %d, hello pid %d, fork server %d", p.PID(), p.Hello().PID, z.pid)
	}
	if st, ok := readStat(p.PID()); !ok || st.pgrp != p.PID() {
		t.Errorf("the forked harness is not its own process group: %+v", st)
	}
	r, err := call(t, p, "plan", map[string]any{"config": map[string]any{"region": "eu"}}, 5*time.Second)
	if err != nil || !r.OK || !strings.Contains(r.Stdout.String(), "plan stdout") {
		t.Fatalf("plan: %v %+v %q", err, r, r.Stdout.String())
	}
	if !strings.Contains(string(r.Value), `"region":"eu"`) && !strings.Contains(string(r.Value), `"region": "eu"`) {
		t.Errorf("plan value %s", r.Value)
	}
	pgid, token := p.PID(), p.ReplicaToken()
	p.Kill()
	if p.Alive() {
		t.Error("alive after Kill")
	}
	assertGone(t, pgid, token)
}

// TestZygoteExitStatuses: the fork server reports how each forked harness ended, so that a replica that
// exits, crashes, breaks the protocol or blocks its loop is reported as precisely as a started one.
func TestZygoteExitStatuses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python (skipped under -short)")
	}
	z := startZygote(t)
	o := Options{Zygote: z}
	pe := hostileFatal(t, "exit", o, 10*time.Second, KindExited, "exited with status 3", "call prepare_session")
	if pe.ExitCode != 3 {
		t.Errorf("exit code %d", pe.ExitCode)
	}
	pe = hostileFatal(t, "segfault", o, 10*time.Second, KindSignaled, "killed by signal SIGSEGV")
	if pe.Signal != "SIGSEGV" {
		t.Errorf("signal %q", pe.Signal)
	}
	hostileFatal(t, "fds", o, 10*time.Second, KindProtocol, "harness protocol corrupted")
	pe = hostileFatal(t, "blockloop", o, 300*time.Millisecond, KindHung, "did not settle", "after cancel")
	if !strings.Contains(pe.Stack, "stuck_forever") {
		t.Errorf("no stack dump of the blocked loop:\n%s", pe.Stack)
	}
}

// TestZygoteLingerSwept: a forked replica stamps its token into its environment block, so its descendants are
// found and swept like those of a started one.
func TestZygoteLingerSwept(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python (skipped under -short)")
	}
	lingerAndSweep(t, Options{Zygote: startZygote(t)})
}

// TestZygoteGoneChildrenStillReported: when the fork server dies first, a forked harness's death is still
// noticed (with its status unknown), so nothing waits for ever.
func TestZygoteGoneChildrenStillReported(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python (skipped under -short)")
	}
	z := startZygote(t)
	p, _ := startLoaded(t, fixtureDir(t, "good"), "good_provider.provider:Provider", Options{Zygote: z})
	killGroup(z.pid, 9)
	<-z.done
	pgid, token := p.PID(), p.ReplicaToken()
	p.Kill()
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		t.Fatal("the death of a harness whose fork server died was never noticed")
	}
	assertGone(t, pgid, token)

	// A dead fork server is no reason to fail: the next process starts as its own interpreter.
	p, _ = startLoaded(t, fixtureDir(t, "good"), "good_provider.provider:Provider", Options{Zygote: z})
	if p.proc.forked {
		t.Error("the process claims to be forked by a dead fork server")
	}
	r, err := call(t, p, "plan", map[string]any{"config": map[string]any{}}, 5*time.Second)
	if err != nil || !r.OK {
		t.Fatalf("plan after the fork server died: %v %+v", err, r)
	}
	p.Close()
}

// TestZygoteSilentServerIsStopped: a fork server that does not answer is stopped, and the process starts as its
// own interpreter on fresh pipes.
func TestZygoteSilentServerIsStopped(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python (skipped under -short)")
	}
	z := startZygote(t)
	saved := zygoteAnswer
	zygoteAnswer = 300 * time.Millisecond
	t.Cleanup(func() { zygoteAnswer = saved })
	if err := syscall.Kill(z.pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	p, _ := startLoaded(t, fixtureDir(t, "good"), "good_provider.provider:Provider", Options{Zygote: z})
	if p.proc.forked {
		t.Error("the process claims to be forked by a server that never answered")
	}
	select {
	case <-z.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the silent fork server was not stopped")
	}
	r, err := call(t, p, "plan", map[string]any{"config": map[string]any{}}, 5*time.Second)
	if err != nil || !r.OK {
		t.Fatalf("plan: %v %+v", err, r)
	}
	p.Close()
}

// TestZygoteHarnessKilled: a forked harness is its own subreaper, so what it started stays below it however it
// escaped (double fork, setsid, an empty environment); when the harness is killed from outside, that is
// re-parented to the fork server, itself a subreaper, which kills it and says the tree is gone (no sweep).
func TestZygoteHarnessKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python (skipped under -short)")
	}
	marker := newMarker()
	p := startHostile(t, "escape", Options{Zygote: startZygote(t), Env: []string{"ASTRABOX_TEST_MARKER=" + marker}})
	pgid, token := p.PID(), p.ReplicaToken()
	if r, err := call(t, p, "prepare_session", sessionArgs(t.TempDir()), 10*time.Second); err != nil || !r.OK {
		t.Fatalf("session: %v %+v", err, r)
	}
	escaped := waitForComm(t, marker)
	for _, pid := range escaped {
		if st, ok := readStat(pid); !ok || st.ppid != p.PID() {
			t.Errorf("escaped process %d is not re-parented to its harness %d (a subreaper): %+v", pid, p.PID(), st)
		}
	}
	if err := syscall.Kill(p.PID(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if !waitAll(10*time.Second, p.exited) {
		t.Fatal("the killed harness was never reported gone")
	}
	if left := pidsWithComm(marker); len(left) > 0 {
		t.Fatalf("escaped processes %v (of %v) outlived their killed harness", left, escaped)
	}
	p.mu.Lock()
	swept := p.st.swept
	p.mu.Unlock()
	if !swept || !p.proc.drained {
		t.Errorf("the fork server did not report the tree drained (drained %v, clean %v)", p.proc.drained, swept)
	}
	p.Close()
	assertGone(t, pgid, token)
}

// TestZygoteReplicasKeepTheirOwn: the end of one forked replica kills what it left and nothing of another
// replica of the same fork server, even processes of that other replica that escaped the same way.
func TestZygoteReplicasKeepTheirOwn(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python (skipped under -short)")
	}
	z := startZygote(t)
	mine, theirs := newMarker(), newMarker()
	a := startHostile(t, "escape", Options{Zygote: z, Env: []string{"ASTRABOX_TEST_MARKER=" + mine}})
	b := startHostile(t, "escape", Options{Zygote: z, Env: []string{"ASTRABOX_TEST_MARKER=" + theirs}})
	for _, p := range []*Process{a, b} {
		if r, err := call(t, p, "prepare_session", sessionArgs(t.TempDir()), 10*time.Second); err != nil || !r.OK {
			t.Fatalf("session: %v %+v", err, r)
		}
	}
	waitForComm(t, mine)
	kept := waitForComm(t, theirs)
	closeWithin(t, a, 20*time.Second)
	if left := pidsWithComm(mine); len(left) > 0 {
		t.Fatalf("the closed replica's escaped processes %v are still running", left)
	}
	if now := pidsWithComm(theirs); len(now) != len(kept) {
		t.Fatalf("closing one replica killed another's processes: %v before, %v after", kept, now)
	}
	closeWithin(t, b, 20*time.Second)
	if left := pidsWithComm(theirs); len(left) > 0 {
		t.Fatalf("escaped processes %v left running after Close", left)
	}
}

// TestHostileKillParent: a forked harness's parent is the fork server, whose death would end every replica it
// forked. A provider that kills its parent (from Python, with the kill command, through the C library) is
// refused, with a clear error in its own replica only: the server lives on, and another replica of the same
// server keeps answering.
func TestHostileKillParent(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python (skipped under -short)")
	}
	z := startZygote(t)
	p := startHostile(t, "killparent", Options{Zygote: z})
	other, _ := startLoaded(t, fixtureDir(t, "good"), "good_provider.provider:Provider", Options{Zygote: z})
	if st, _ := readStat(p.PID()); st.ppid != z.pid {
		t.Fatalf("the harness's parent is %d, not the fork server %d: the fixture kills something else", st.ppid, z.pid)
	}
	r, err := call(t, p, "prepare_session", sessionArgs(t.TempDir()), 10*time.Second)
	if err != nil || r.OK || r.Error == nil {
		t.Fatalf("prepare_session killed its parent without an error: %v %+v", err, r)
	}
	for _, want := range []string{"astrabox refused os.kill", "is the fork server", "must not signal"} {
		if !strings.Contains(r.Error.Message, want) {
			t.Errorf("the refusal does not say %q: %s: %s", want, r.Error.Type, r.Error.Message)
		}
	}
	if r.Error.Type != "PermissionError" {
		t.Errorf("error type %q, want PermissionError", r.Error.Type)
	}
	// Below Python: the kill command and the C library are refused by the kernel (the seccomp filter).
	for _, how := range []string{"command", "libc"} {
		r, err = call(t, p, "plan", map[string]any{"config": map[string]any{"how": how}}, 10*time.Second)
		if err != nil || r.OK || r.Error == nil {
			t.Fatalf("plan (%s) killed its parent without an error: %v %+v", how, err, r)
		}
		if !alive(z.pid) {
			t.Fatalf("the fork server died of a kill %s", how)
		}
	}
	if !alive(z.pid) || !p.Alive() {
		t.Fatalf("after the refused kills: fork server alive %v, harness alive %v", alive(z.pid), p.Alive())
	}
	if r, err := call(t, other, "plan", map[string]any{"config": map[string]any{}}, 5*time.Second); err != nil || !r.OK {
		t.Fatalf("the other replica of the same fork server: %v %+v", err, r)
	}
	pgid, token := p.PID(), p.ReplicaToken()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	other.Close()
	assertGone(t, pgid, token)
}

// TestZygoteReplicaImportsItsProviderFresh: the fork server prepares itself (imports, a rehearsal of the
// harness's start and load) but never imports a provider, so a provider that keeps per-process facts from its
// import (its pid, the time, a random number) gets its own replica's in every forked replica, and the file it
// opens at import is still observed as its own (the rehearsal installs no hook and hides no event).
func TestZygoteReplicaImportsItsProviderFresh(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python (skipped under -short)")
	}
	z := startZygote(t)
	dir := fixtureDir(t, "fresh")
	instances := map[string]bool{}
	for i := 0; i < 2; i++ {
		before := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		p, err := Start(ctx, Options{Python: "python3", ProjectDir: dir, Limits: testLimits(), Zygote: z, Replica: "fresh"})
		if err != nil {
			cancel()
			t.Fatalf("start: %v", err)
		}
		r, err := p.Load(ctx, LoadArgs{Target: "fresh_provider:Provider", Paths: []string{dir + "/src"}, ProjectRoot: dir})
		cancel()
		if err != nil || !r.OK {
			t.Fatalf("load: %v %+v", err, r)
		}
		var pid int
		var at float64
		var instance, settings string
		if _, err := fmt.Sscanf(strings.TrimSpace(r.Stdout.String()), "imported pid=%d at=%f instance=%s settings=%s", &pid, &at, &instance, &settings); err != nil {
			t.Fatalf("the provider's import said %q: %v", r.Stdout.String(), err)
		}
		if pid != p.PID() || pid == z.PID() {
			t.Errorf("replica %d: the provider's import saw pid %d (fork server %d)", p.PID(), pid, z.PID())
		}
		if imported := time.Unix(0, int64(at*1e9)); imported.Before(before.Add(-time.Second)) {
			t.Errorf("replica %d: the provider was imported at %v, before its replica was started at %v", p.PID(), imported, before)
		}
		if instances[instance] {
			t.Errorf("replica %d: the random instance id %s of another replica", p.PID(), instance)
		}
		instances[instance] = true
		opened := false
		for _, a := range r.Observations.Audit {
			if a.Event == "open" && strings.Contains(a.Summary, "settings.txt") && strings.HasSuffix(a.File, "fresh_provider.py") {
				opened = true
			}
		}
		if !opened || settings != "region=eu" {
			t.Errorf("replica %d: the open of settings.txt at import was not observed as the provider's (%q): %+v", p.PID(), settings, r.Observations.Audit)
		}
		p.Close()
	}
}
