package harness

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Each hostile provider must end in a clear error (or, for print and flood,
// in bounded captured output) and leave no process behind.

func startHostile(t *testing.T, name string, o Options) *Process {
	t.Helper()
	skipShort(t)
	noLeaks(t)
	p, li := startLoaded(t, fixtureDir(t, "hostile", name), "hostile_"+name+":Provider", o)
	if !li.Instantiated || li.Name == nil || *li.Name != "hostile-"+name {
		t.Fatalf("load info %+v", li)
	}
	return p
}

func TestHostilePrint(t *testing.T) {
	p := startHostile(t, "print", Options{})
	r, err := call(t, p, "plan", map[string]any{"config": map[string]any{}}, 5*time.Second)
	if err != nil || r.Stdout.String() != "plan says hello on stdout\n" {
		t.Fatalf("plan: %v %q", err, r.Stdout.String())
	}
	r, err = call(t, p, "prepare_session", sessionArgs(t.TempDir()), 5*time.Second)
	if err != nil || r.Stdout.String() != "prepare_session on stdout\n" || r.Stderr.String() != "prepare_session on stderr\n" {
		t.Fatalf("session: %v %q %q", err, r.Stdout.String(), r.Stderr.String())
	}
	pgid, token := p.PID(), p.ReplicaToken()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	assertGone(t, pgid, token)
}

func TestHostileFlood(t *testing.T) {
	lim := testLimits()
	lim.CaptureBytes = 16 << 10
	p := startHostile(t, "flood", Options{Limits: lim})
	r, err := call(t, p, "prepare_session", sessionArgs(t.TempDir()), 30*time.Second)
	if err != nil || !r.OK {
		t.Fatalf("flood: %v %+v", err, r)
	}
	c := r.Stdout
	if len(c.Head) != 8<<10 || len(c.Tail) != 8<<10 {
		t.Fatalf("head %d tail %d bytes, want 8 KiB each", len(c.Head), len(c.Tail))
	}
	if !bytes.HasPrefix(c.Head, []byte("FLOOD-START|flood-")) || !bytes.HasSuffix(c.Tail, []byte("flood-|FLOOD-END")) {
		t.Errorf("head %q... tail ...%q", c.Head[:20], c.Tail[len(c.Tail)-20:])
	}
	if c.Len() < 300<<20 || c.Dropped != c.Len()-16<<10 {
		t.Errorf("len %d dropped %d", c.Len(), c.Dropped)
	}
	// The process is still usable and the next call's output is its own.
	r, err = call(t, p, "plan", map[string]any{"config": map[string]any{}}, 5*time.Second)
	if err != nil || r.Stdout.Len() != 0 {
		t.Fatalf("after flood: %v %q", err, r.Stdout.String())
	}
	pgid, token := p.PID(), p.ReplicaToken()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	assertGone(t, pgid, token)
}

// hostileFatal runs prepare_session on fixture name and checks the error.
func hostileFatal(t *testing.T, name string, o Options, timeout time.Duration, kind ErrorKind, text ...string) *ProcessError {
	t.Helper()
	p := startHostile(t, name, o)
	pgid, token := p.PID(), p.ReplicaToken()
	r, err := call(t, p, "prepare_session", sessionArgs(t.TempDir()), timeout)
	if err == nil {
		t.Fatalf("%s: no error; reply %+v", name, r)
	}
	pe := asProcessError(t, err, kind, text...)
	if pe.Call != "prepare_session" {
		t.Errorf("call %q", pe.Call)
	}
	if p.Alive() {
		t.Error("alive after a fatal error")
	}
	_, err = call(t, p, "plan", map[string]any{"config": map[string]any{}}, time.Second)
	asProcessError(t, err, KindClosed, "died earlier")
	p.Close()
	assertGone(t, pgid, token)
	return pe
}

func TestHostileFDs(t *testing.T) {
	hostileFatal(t, "fds", Options{}, 10*time.Second, KindProtocol, "harness protocol corrupted", "larger than 64 MiB")
}

func TestHostileExit(t *testing.T) {
	pe := hostileFatal(t, "exit", Options{}, 10*time.Second, KindExited, "exited with status 3", "call prepare_session")
	if pe.ExitCode != 3 {
		t.Errorf("exit code %d", pe.ExitCode)
	}
}

func TestHostileSegfault(t *testing.T) {
	pe := hostileFatal(t, "segfault", Options{}, 10*time.Second, KindSignaled, "killed by signal SIGSEGV")
	if pe.Signal != "SIGSEGV" || pe.ExitCode != -1 {
		t.Errorf("signal %q exit %d", pe.Signal, pe.ExitCode)
	}
}

func TestHostileBlockLoop(t *testing.T) {
	pe := hostileFatal(t, "blockloop", Options{}, 300*time.Millisecond, KindHung, "did not settle", "after cancel")
	if !strings.Contains(pe.Stack, "stuck_forever") || !strings.Contains(pe.Stack, "hostile_blockloop.py") {
		t.Errorf("stack dump does not show the provider's frame:\n%s", pe.Stack)
	}
}

func TestHostileMemory(t *testing.T) {
	lim := testLimits()
	lim.MemoryRSS = 256 << 20
	hostileFatal(t, "memory", Options{Limits: lim}, 20*time.Second, KindMemoryLimit, "exceeded the memory limit", "limit of 256 MiB")
}

func TestHostileIgnoreTerm(t *testing.T) {
	blocked := filepath.Join(t.TempDir(), "blocked")
	p := startHostile(t, "ignoreterm", Options{Env: []string{"ASTRABOX_TEST_BLOCKED=" + blocked}})
	pgid, token := p.PID(), p.ReplicaToken()
	r, err := call(t, p, "prepare_session", sessionArgs(t.TempDir()), 5*time.Second)
	if err != nil || !r.OK {
		t.Fatalf("session: %v %+v", err, r)
	}
	waitForFile(t, blocked, "the provider never blocked its loop")
	err = p.Close()
	asProcessError(t, err, KindHung, "did not exit within 1s after shutdown", "SIGKILL")
	if err2 := p.Close(); err2 != err {
		t.Errorf("second close returned %v, want the first result", err2)
	}
	assertGone(t, pgid, token)
}

func TestHostileLinger(t *testing.T) {
	lingerAndSweep(t, Options{})
}

// lingerAndSweep: children that outlive the harness, even ones that left its process group (executed or only
// forked), carry the replica token and are swept.
func lingerAndSweep(t *testing.T, o Options) {
	t.Helper()
	p := startHostile(t, "linger", o)
	pgid, token := p.PID(), p.ReplicaToken()
	r, err := call(t, p, "prepare_session", sessionArgs(t.TempDir()), 5*time.Second)
	if err != nil || !r.OK {
		t.Fatalf("session: %v %+v", err, r)
	}
	// The harness and its three children carry the token; two left the process group.
	outside := 0
	var kids []int
	for i := 0; i < 50; i++ { // the forked child may still be on its way to its own session
		kids, outside = pidsWithToken(token), 0
		for _, pid := range kids {
			if info, ok := readStat(pid); ok && info.pgrp != pgid {
				outside++
			}
		}
		if len(kids) >= 4 && outside >= 2 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(kids) < 4 || outside < 2 {
		t.Fatalf("expected the harness and three children, two outside the group; got %v (%d outside)", kids, outside)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	assertGone(t, pgid, token)
}

// pidsWithToken returns the processes whose environment holds ASTRABOX_REPLICA_TOKEN=token (other than
// this one), whatever their group: the linger test counts them.
func pidsWithToken(token string) []int {
	needle := []byte("ASTRABOX_REPLICA_TOKEN=" + token + "\x00")
	self := os.Getpid()
	var out []int
	for _, pid := range allPids() {
		if pid == self {
			continue
		}
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
		if err != nil || len(b) == 0 {
			continue
		}
		if bytes.Contains(append(b, 0), needle) {
			if p, ok := readStat(pid); ok && p.state == 'Z' {
				continue
			}
			out = append(out, pid)
		}
	}
	return out
}

// skipShort skips a test that starts Python under -short.
func skipShort(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts Python; skipped under -short")
	}
}

// newMarker returns a name for the processes of one test (at most 15 bytes: what /proc/<pid>/comm holds).
func newMarker() string { return "abx" + randomHex(6) }

// pidsWithComm lists the live processes named marker (their /proc/<pid>/comm).
func pidsWithComm(marker string) []int {
	var out []int
	for _, pid := range allPids() {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
		if err != nil || strings.TrimSpace(string(b)) != marker {
			continue
		}
		if info, ok := readStat(pid); ok && info.state != 'Z' {
			out = append(out, pid)
		}
	}
	return out
}

// launchers are the two ways a harness is started: under a warden, and forked by a fork server.
func launchers(t *testing.T) map[string]func(t *testing.T) Options {
	return map[string]func(t *testing.T) Options{
		"warden":      func(t *testing.T) Options { return Options{} },
		"fork server": func(t *testing.T) Options { return Options{Zygote: startZygote(t)} },
	}
}

// TestHostileEscapees: descendants that shed every trace the old sweep followed (the process group, the
// session, the replica token in the environment, their identity every millisecond) are all gone when the
// replica is closed, and Close returns within its bound.
func TestHostileEscapees(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python (skipped under -short)")
	}
	skipShort(t)
	for _, name := range []string{"escape", "envwipe", "hopper"} {
		for via, opts := range launchers(t) {
			t.Run(name+" via "+via, func(t *testing.T) {
				marker, heartbeat := newMarker(), filepath.Join(t.TempDir(), "heartbeat")
				o := opts(t)
				o.Env = []string{"ASTRABOX_TEST_MARKER=" + marker, "ASTRABOX_TEST_HEARTBEAT=" + heartbeat}
				p := startHostile(t, name, o)
				pgid, token := p.PID(), p.ReplicaToken()
				r, err := call(t, p, "prepare_session", sessionArgs(t.TempDir()), 10*time.Second)
				if err != nil || !r.OK {
					t.Fatalf("session: %v %+v", err, r)
				}
				escaped := waitForComm(t, marker)
				for _, pid := range escaped {
					// It really escaped what the sweep used to follow: the group and the token.
					if info, ok := readStat(pid); ok && info.pgrp == pgid {
						t.Errorf("process %d is still in the harness's group", pid)
					}
					if b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ"); bytes.Contains(b, []byte(token)) {
						t.Errorf("process %d still carries the replica token", pid)
					}
				}
				if name == "hopper" && !beats(heartbeat) {
					t.Fatal("the hopper does not hop: the fixture does not do what it claims")
				}
				closeWithin(t, p, 20*time.Second)
				if left := pidsWithComm(marker); len(left) > 0 {
					t.Fatalf("escaped processes left running after Close: %v", left)
				}
				if name == "hopper" && beating(heartbeat) {
					t.Fatal("the hopper still hops after Close")
				}
				assertGone(t, pgid, token)
			})
		}
	}
}

// fileSize is the size of file, -1 when it cannot be read.
func fileSize(file string) int64 {
	st, err := os.Stat(file)
	if err != nil {
		return -1
	}
	return st.Size()
}

// beats waits (bounded, 10 s) for the file to grow, the event of a live hopper's hop, and reports whether it
// did: it returns as soon as the file grows.
func beats(file string) bool {
	before := fileSize(file)
	for i := 0; i < 1000; i++ {
		if fileSize(file) != before {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}

// beating reports whether the file grows within 300 ms (at a hop a millisecond, a live hopper appends about
// three hundred bytes meanwhile). That a dead hopper does not hop has no event to wait on: it is an
// observation over a window, many hops long.
func beating(file string) bool {
	before := fileSize(file)
	time.Sleep(300 * time.Millisecond)
	return fileSize(file) != before
}

// waitForComm waits (bounded) until a process named marker runs, and returns them.
func waitForComm(t *testing.T, marker string) []int {
	t.Helper()
	for i := 0; i < 250; i++ {
		if pids := pidsWithComm(marker); len(pids) > 0 {
			return pids
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no process named %s ever ran: the fixture did not do what it claims", marker)
	return nil
}

// waitForFile waits (bounded) until a fixture creates file, the event it announces; it fails the test with
// why when it never comes.
func waitForFile(t *testing.T, file, why string) {
	t.Helper()
	for i := 0; i < 500; i++ {
		if _, err := os.Stat(file); err == nil {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%s: %s was never created", why, file)
}

// closeWithin closes p and fails the test if Close does not return within d.
func closeWithin(t *testing.T, p *Process, d time.Duration) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- p.Close() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		t.Fatalf("Close did not return within %s", d)
		return nil
	}
}

// TestHostileJoinGroup: a harness cannot move into its parent's process group (it leads its own session),
// and one that ignores SIGTERM and blocks its loop is still ended by Close within its bound.
func TestHostileJoinGroup(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python (skipped under -short)")
	}
	skipShort(t)
	for via, opts := range launchers(t) {
		t.Run(via, func(t *testing.T) {
			blocked := filepath.Join(t.TempDir(), "blocked")
			o := opts(t)
			o.Env = append(o.Env, "ASTRABOX_TEST_BLOCKED="+blocked)
			p := startHostile(t, "joingroup", o)
			pgid, token := p.PID(), p.ReplicaToken()
			r, err := call(t, p, "prepare_session", sessionArgs(t.TempDir()), 5*time.Second)
			if err != nil || !r.OK {
				t.Fatalf("session: %v %+v", err, r)
			}
			if out := r.Stdout.String(); !strings.Contains(out, "setpgid failed: 1") {
				t.Errorf("the harness moved into another group (or did not try): %q", out)
			}
			if info, ok := readStat(pgid); !ok || info.pgrp != pgid || info.pgrp == syscall.Getpgrp() {
				t.Errorf("harness %d is in group %d (ours %d)", pgid, info.pgrp, syscall.Getpgrp())
			}
			waitForFile(t, blocked, "the provider never blocked its loop")
			err = closeWithin(t, p, 20*time.Second)
			asProcessError(t, err, KindHung, "did not exit within 1s after shutdown", "SIGKILL")
			assertGone(t, pgid, token)
		})
	}
}

// TestHostileStopKit: a provider that stops the kit with SIGSTOP does not hang it: the supervisor (or the
// fork server) finds the kit stopped, continues it, and every replica alive fails with a clear error.
func TestHostileStopKit(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python (skipped under -short)")
	}
	skipShort(t)
	for via, opts := range launchers(t) {
		t.Run(via, func(t *testing.T) {
			o := opts(t)
			o.Env = []string{"ASTRABOX_TEST_STOP_PID=" + strconv.Itoa(os.Getpid())}
			p := startHostile(t, "stopkit", o)
			pgid, token := p.PID(), p.ReplicaToken()
			// Should the kit not be continued, this continues it after 20 s, and the test fails below.
			rescue := exec.Command("sh", "-c", "sleep 20; kill -CONT "+strconv.Itoa(os.Getpid()))
			if err := rescue.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = rescue.Process.Kill(); _ = rescue.Wait() }()
			start := time.Now()
			_, _ = call(t, p, "prepare_session", sessionArgs(t.TempDir()), 10*time.Second)
			for i := 0; i < 250 && p.Alive(); i++ {
				time.Sleep(20 * time.Millisecond)
			}
			if waited := time.Since(start); waited > 15*time.Second {
				t.Fatalf("the kit was continued only after %s: by the rescue, not by the watch", waited)
			}
			_, err := call(t, p, "plan", map[string]any{"config": map[string]any{}}, time.Second)
			asProcessError(t, err, KindClosed, "died earlier", "stopped astrabox with a signal (SIGSTOP)")
			p.Close()
			assertGone(t, pgid, token)
		})
	}
}

// TestHarnessProcessLimit: a harness may create fewer processes than the kit (RLIMIT_NPROC, soft and hard,
// below the kit's by a reserve), so that a provider that forks without end cannot take from the kit the
// processes and threads it needs to end it.
func TestHarnessProcessLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python (skipped under -short)")
	}
	skipShort(t)
	var saved unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NPROC, &saved); err != nil {
		t.Fatal(err)
	}
	lim := saved
	if lim.Cur == unix.RLIM_INFINITY || lim.Cur > 1<<20 {
		lim.Cur = 1 << 20
	}
	if err := unix.Setrlimit(unix.RLIMIT_NPROC, &lim); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Setrlimit(unix.RLIMIT_NPROC, &saved) })
	want := procsCap()
	if want == 0 || want >= lim.Cur {
		t.Fatalf("cap %d for a limit of %d", want, lim.Cur)
	}
	for via, opts := range launchers(t) {
		t.Run(via, func(t *testing.T) {
			p := startHostile(t, "print", opts(t))
			b, err := os.ReadFile("/proc/" + strconv.Itoa(p.PID()) + "/limits")
			if err != nil {
				t.Fatal(err)
			}
			line := ""
			for _, l := range strings.Split(string(b), "\n") {
				if strings.HasPrefix(l, "Max processes") {
					line = l
				}
			}
			if f := strings.Fields(line); len(f) < 4 || f[2] != strconv.FormatUint(want, 10) || f[3] != f[2] {
				t.Errorf("harness limits %q, want %d soft and hard", line, want)
			}
			p.Close()
		})
	}
}
