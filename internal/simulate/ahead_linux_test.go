//go:build linux

package simulate

import (
	"bufio"
	"bytes"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// policyOf is the scheduling class of a process's main thread.
func policyOf(t *testing.T, pid int) uint32 {
	t.Helper()
	attr, err := unix.SchedGetAttr(pid, 0)
	if err != nil {
		t.Fatalf("sched_getattr %d: %v", pid, err)
	}
	return attr.Policy
}

// TestSetIdleMovesEveryThreadAndBack: setIdle puts a process in the idle class and takes it out again
// (where this process may), and reports a process that does not exist as such.
func TestSetIdleMovesEveryThreadAndBack(t *testing.T) {
	if !CanPrepareAhead() {
		t.Skip("this process may not move a thread out of SCHED_IDLE")
	}
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	pid := cmd.Process.Pid
	if err := setIdle(pid, true); err != nil {
		t.Fatal(err)
	}
	if p := policyOf(t, pid); p != unix.SCHED_IDLE {
		t.Fatalf("policy after setIdle(true) = %d, want SCHED_IDLE (%d)", p, unix.SCHED_IDLE)
	}
	if err := setIdle(pid, false); err != nil {
		t.Fatal(err)
	}
	if p := policyOf(t, pid); p != unix.SCHED_NORMAL {
		t.Fatalf("policy after setIdle(false) = %d, want SCHED_NORMAL", p)
	}
	cmd.Process.Kill()
	cmd.Wait()
	if err := setIdle(pid, false); err == nil {
		t.Fatalf("setIdle of an ended process %d succeeded", pid)
	}
}

// TestRestoreReachesWhatTheProcessStarted: a process started from an idle one is idle too (it takes its
// creator's class), and setTreeNormal moves it back with its parent, as restore does for a replica whose
// provider started a process while it loaded ahead.
func TestRestoreReachesWhatTheProcessStarted(t *testing.T) {
	if !CanPrepareAhead() {
		t.Skip("this process may not move a thread out of SCHED_IDLE")
	}
	// The shell waits for a line before it starts its child, so that the child is started from an idle parent.
	cmd := exec.Command("sh", "-c", "read _; sleep 30 & echo $!; wait")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	var child int
	defer func() {
		if child > 0 {
			syscall.Kill(child, syscall.SIGKILL)
		}
		cmd.Process.Kill()
		cmd.Wait()
	}()
	if err := setIdle(pid, true); err != nil {
		t.Fatal(err)
	}
	if _, err := in.Write([]byte("go\n")); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("read the child's pid: %v", err)
	}
	if child, err = strconv.Atoi(strings.TrimSpace(line)); err != nil {
		t.Fatalf("child pid %q: %v", line, err)
	}
	if p := policyOf(t, child); p != unix.SCHED_IDLE {
		t.Fatalf("a child started from an idle process has policy %d, want SCHED_IDLE (%d)", p, unix.SCHED_IDLE)
	}
	if err := setTreeNormal(pid); err != nil {
		t.Fatal(err)
	}
	for _, p := range []int{pid, child} {
		if got := policyOf(t, p); got != unix.SCHED_NORMAL {
			t.Fatalf("policy of %d after setTreeNormal = %d, want SCHED_NORMAL", p, got)
		}
	}
}

// TestAScenarioOpenedAheadPlaysAsRunOpensIt: a scenario opened ahead (PrepareAhead) loads its replicas in
// the idle class, Run moves them back to the normal class before it plays, and the history is the
// byte-identical one Run gives when it opens the scenario itself.
func TestAScenarioOpenedAheadPlaysAsRunOpensIt(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python")
	}
	if !CanPrepareAhead() {
		t.Skip("this process may not move a thread out of SCHED_IDLE")
	}
	ctx, sc, o := probeLifecycle(t)

	opened, err := Run(ctx, sc, o)
	if err != nil {
		t.Fatal(err)
	}
	// The classes of the replicas at the first step's first event: the platform's Verbose is the one it was
	// opened with.
	var classes []uint32
	var pr *Prepared
	ao := o
	ao.Verbose = verboseFunc(func(line []byte) {
		if len(classes) == 0 && bytes.HasPrefix(line, []byte("step 1 ")) {
			for _, r := range pr.p.replicas {
				classes = append(classes, policyOf(t, r.proc.PID()))
			}
		}
	})
	pr = PrepareAhead(ctx, sc, ao)
	<-pr.Ready()
	if pr.err != nil {
		t.Fatalf("prepare ahead: %v", pr.err)
	}
	if len(pr.p.ahead.lowered) != sc.Replicas {
		t.Fatalf("%d replica processes loaded in the idle class, want %d", len(pr.p.ahead.lowered), sc.Replicas)
	}
	for _, r := range pr.p.replicas {
		if p := policyOf(t, r.proc.PID()); p != unix.SCHED_IDLE {
			t.Fatalf("replica %s opened ahead runs in class %d, want SCHED_IDLE", r.name, p)
		}
	}
	po := o
	po.Prepared = pr
	played, err := Run(ctx, sc, po)
	if err != nil {
		t.Fatal(err)
	}
	if played != pr.p.hist {
		t.Fatalf("Run opened its own platform instead of playing the one opened ahead")
	}
	for i, c := range classes {
		if c != unix.SCHED_NORMAL {
			t.Errorf("replica %d played its scenario in class %d, want SCHED_NORMAL", i+1, c)
		}
	}
	if len(classes) != sc.Replicas {
		t.Fatalf("saw the classes of %d replicas while the scenario played, want %d", len(classes), sc.Replicas)
	}
	if a, b := mustJSON(t, opened), mustJSON(t, played); !bytes.Equal(a, b) {
		t.Fatalf("the history of the scenario opened ahead differs from Run's own:\nopened %s\nahead  %s", a, b)
	}
}

// verboseFunc is a Verbose writer that gives f each line the platform writes.
type verboseFunc func([]byte)

func (f verboseFunc) Write(b []byte) (int, error) { f(b); return len(b), nil }
