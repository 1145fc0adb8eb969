//go:build linux

package harness

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// These tests run this test binary again as a stand-in for the kit (TestKitHelper, chosen by
// ASTRABOX_TEST_KIT_HELPER), to do to it what cannot be done to the test process itself: kill it with
// SIGKILL, or give it a controlling terminal.

const kitHelperVar = "ASTRABOX_TEST_KIT_HELPER"

// TestKitHelper is not a test: it is the stand-in kit of TestKitKilled and TestNoTerminal, and skips unless
// one of them started it.
func TestKitHelper(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python (skipped under -short)")
	}
	mode := os.Getenv(kitHelperVar)
	if mode == "" {
		t.Skip("the stand-in kit of TestKitKilled and TestNoTerminal; runs only when they start it")
	}
	var lines []string
	if mode == "tty" { // the stand-in kit has the terminal: a harness could reach it, were it not kept away
		if f, err := os.OpenFile("/dev/tty", os.O_RDWR, 0); err == nil {
			lines = append(lines, "HELPER-TTY ok")
			f.Close()
		}
	}
	z := startZygote(t)
	for _, o := range []Options{{Replica: "warden"}, {Replica: "forked", Zygote: z}} {
		o.Env = []string{"ASTRABOX_TEST_MARKER=" + os.Getenv("ASTRABOX_TEST_MARKER")}
		p, _ := startLoaded(t, fixtureDir(t, "hostile", mode), "hostile_"+mode+":Provider", o)
		r, err := call(t, p, "prepare_session", sessionArgs(t.TempDir()), 10*time.Second)
		if err != nil || !r.OK {
			t.Fatalf("session: %v %+v", err, r)
		}
		lines = append(lines, fmt.Sprintf("PROC %d %d %s %q", p.PID(), p.proc.supervisor, p.ReplicaToken(), r.Stdout.String()))
	}
	lines = append(lines, fmt.Sprintf("ZYGOTE %d", z.pid))
	fmt.Println(strings.Join(lines, "\n") + "\nREADY")
	if mode == "linger" {
		select {} // wait to be killed
	}
}

// kitHelper returns the command that runs TestKitHelper in mode.
func kitHelper(t *testing.T, mode string, env ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestKitHelper$", "-test.count=1", "-test.v")
	// The stand-in kit's own temporary directories live under this test's: a kit killed with SIGKILL never
	// removes its t.TempDir, and the parent's cleanup does.
	cmd.Env = append(append(os.Environ(), kitHelperVar+"="+mode, "TMPDIR="+t.TempDir()), env...)
	return cmd
}

// helperProc is one harness the stand-in kit started.
type helperProc struct {
	pid, supervisor int
	token, stdout   string
}

// parseHelper reads the stand-in kit's report up to READY.
func parseHelper(t *testing.T, r io.Reader) (procs []helperProc, zygote int, all string) {
	t.Helper()
	sc := bufio.NewScanner(r)
	var b strings.Builder
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		b.WriteString(line + "\n")
		f := strings.Fields(line)
		switch {
		case len(f) >= 5 && f[0] == "PROC":
			var hp helperProc
			hp.pid, _ = strconv.Atoi(f[1])
			hp.supervisor, _ = strconv.Atoi(f[2])
			hp.token = f[3]
			hp.stdout, _ = strconv.Unquote(strings.Join(f[4:], " "))
			procs = append(procs, hp)
		case len(f) == 2 && f[0] == "ZYGOTE":
			zygote, _ = strconv.Atoi(f[1])
		case line == "READY":
			return procs, zygote, b.String()
		}
	}
	t.Fatalf("the stand-in kit ended without reporting READY:\n%s", b.String())
	return nil, 0, ""
}

// TestKitKilled: when the kit is killed with SIGKILL, its harnesses (started under a warden and forked by
// the fork server), their supervisors, the fork server and the children the providers started all die too.
func TestKitKilled(t *testing.T) {
	skipShort(t)
	cmd := kitHelper(t, "linger")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	procs, zygote, report := parseHelper(t, out)
	if len(procs) != 2 || zygote == 0 {
		t.Fatalf("report:\n%s", report)
	}
	watch := []int{zygote}
	for _, hp := range procs {
		watch = append(watch, hp.pid, hp.supervisor)
		if n := len(pidsWithToken(hp.token)); n < 4 {
			t.Fatalf("harness %d: %d processes with its token, want it and its three children", hp.pid, n)
		}
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	for i := 0; i < 500; i++ {
		left := []int{}
		for _, pid := range watch {
			if alive(pid) {
				left = append(left, pid)
			}
		}
		for _, hp := range procs {
			left = append(left, pidsWithToken(hp.token)...)
		}
		if len(left) == 0 {
			return
		}
		if i == 499 {
			t.Fatalf("left running after the kit was killed: %v\n%s", left, report)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// openPTY opens a new pseudo-terminal pair.
func openPTY() (master, slave *os.File, err error) {
	master, err = os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, nil, err
	}
	fd := int(master.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		master.Close()
		return nil, nil, err
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		master.Close()
		return nil, nil, err
	}
	slave, err = os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		master.Close()
		return nil, nil, err
	}
	return master, slave, nil
}

// TestNoTerminal: a kit run from a terminal starts harnesses without it: a provider that opens /dev/tty to
// write a canary, turn off echo and retitle the window finds no terminal, under a warden and forked.
func TestNoTerminal(t *testing.T) {
	skipShort(t)
	master, slave, err := openPTY()
	if err != nil {
		t.Skipf("no pseudo-terminal can be allocated here (%v): the test needs one to give the kit a controlling terminal", err)
	}
	defer master.Close()
	marker := newMarker()
	cmd := kitHelper(t, "tty", "ASTRABOX_TEST_MARKER="+marker)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	go func() { <-ctx.Done(); _ = cmd.Process.Kill() }()
	pr, pw := io.Pipe()
	var all strings.Builder
	go func() {
		_, _ = io.Copy(io.MultiWriter(pw, &all), master) // ends with EIO when the helper is gone
		pw.Close()
	}()
	procs, _, report := parseHelper(t, pr)
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	_ = cmd.Wait()
	if len(procs) != 2 {
		t.Fatalf("report:\n%s", report)
	}
	for _, hp := range procs {
		if !strings.Contains(hp.stdout, "no tty:") {
			t.Errorf("harness %d reached a terminal: %q", hp.pid, hp.stdout)
		}
	}
	if !strings.Contains(report, "HELPER-TTY ok") {
		t.Fatalf("the stand-in kit has no controlling terminal, so the test proves nothing:\n%s", report)
	}
	if strings.Contains(all.String(), marker) {
		t.Errorf("the canary reached the terminal:\n%s", all.String())
	}
}

// TestKitJobControlStopIsKept: the user's Ctrl-Z (SIGTSTP) still suspends the kit: the wardens and the fork
// server, which continue a kit that some process stopped, leave a job-control stop alone, and the kit takes
// its name back when continued.
func TestKitJobControlStopIsKept(t *testing.T) {
	skipShort(t)
	cmd := kitHelper(t, "linger")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	parseHelper(t, out)
	pid := cmd.Process.Pid
	state := func() (byte, string) {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return 0, ""
		}
		s := string(b)
		return s[strings.LastIndexByte(s, ')')+2], s[strings.IndexByte(s, '(')+1 : strings.LastIndexByte(s, ')')]
	}
	_, name := state()
	if err := syscall.Kill(pid, syscall.SIGTSTP); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 250; i++ {
		if st, _ := state(); st == 'T' {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond) // five rounds of every watcher
	if st, comm := state(); st != 'T' || comm != "astrabox-tstp" {
		t.Fatalf("after Ctrl-Z the kit is in state %c named %q: a watcher continued it", st, comm)
	}
	_ = syscall.Kill(pid, syscall.SIGCONT)
	for i := 0; i < 250; i++ {
		if st, comm := state(); st != 'T' && comm == name {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	st, comm := state()
	t.Fatalf("continued, the kit is in state %c named %q (was %q)", st, comm, name)
}
