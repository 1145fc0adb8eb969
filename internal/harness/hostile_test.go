package harness

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Each hostile provider must end in a clear error (or, for print and flood,
// in bounded captured output) and leave no process behind.

func startHostile(t *testing.T, name string, o Options) *Process {
	t.Helper()
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
	p := startHostile(t, "ignoreterm", Options{})
	pgid, token := p.PID(), p.ReplicaToken()
	r, err := call(t, p, "prepare_session", sessionArgs(t.TempDir()), 5*time.Second)
	if err != nil || !r.OK {
		t.Fatalf("session: %v %+v", err, r)
	}
	time.Sleep(300 * time.Millisecond) // let the loop block
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
