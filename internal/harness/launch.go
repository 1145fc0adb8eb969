package harness

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"time"
)

// launcher starts one harness process: the wardened exec of an interpreter, or a fork from a [Zygote].
type launcher interface {
	launch(s launchSpec) (*launched, error)
}

// launchSpec is what a launcher needs: the interpreter, the script, the working directory, the whole
// environment and the child's ends of its four pipes.
type launchSpec struct {
	python, script, dir string
	env                 []string
	pipes               *procPipes
}

// exitState is how a harness ended: its wait status when its supervisor reaped it, or known=false (with why)
// when the supervisor was gone first.
type exitState struct {
	status syscall.WaitStatus
	known  bool
	why    error
}

// launched is a started harness: its pid (also its process group and session), the pid of the supervisor
// below which all its descendants stay (0 when there is none), its exit, and the end of its supervisor, after
// which nothing of the harness is left.
type launched struct {
	pid, supervisor int
	exit            <-chan exitState
	gone            <-chan struct{}
	forked          bool // forked by a fork server
	// supervisorStart is the supervisor's start time in clock ticks after boot (0 if unknown).
	supervisorStart uint64
}

// spawnReq asks the spawner thread to start one command.
type spawnReq struct {
	cmd  *exec.Cmd
	done chan error
}

var spawnCh = make(chan spawnReq)

// startOnSpawner starts cmd from one OS thread that never exits. A parent-death signal is tied to the thread
// that forked the child, not to the process: started from a thread that the Go runtime later retires, the
// child would be signalled while the kit lives on.
func startOnSpawner(cmd *exec.Cmd) error {
	r := spawnReq{cmd: cmd, done: make(chan error, 1)}
	spawnCh <- r
	return <-r.done
}

// The spawner starts with the package (not with the first process), so that it is no goroutine that a
// process start leaves behind.
func init() {
	if os.Getenv(wardenVar) == "1" {
		return
	}
	go func() {
		runtime.LockOSThread() // never unlocked: the thread lives as long as the kit
		for r := range spawnCh {
			r.done <- r.cmd.Start()
		}
	}()
}

// wardenLauncher starts the harness under a warden (warden.go): this binary again, through /proc/self/exe.
type wardenLauncher struct{}

// wardenAnswer bounds the wait for the warden to say it started the harness (a Go start and a fork).
const wardenAnswer = 30 * time.Second

func (wardenLauncher) launch(s launchSpec) (*launched, error) {
	statusR, statusW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("create pipe: %w", err)
	}
	defer statusW.Close()
	cmd := exec.Command("/proc/self/exe", s.python, "-B", s.script)
	cmd.Args[0] = "astrabox-warden"
	cmd.Dir = s.dir
	cmd.Stdout, cmd.Stderr = s.pipes.outW, s.pipes.errW
	cmd.ExtraFiles = []*os.File{s.pipes.reqR, s.pipes.respW, statusW}
	cmd.Env = append(append([]string(nil), s.env...), wardenVar+"=1")
	// No parent-death signal: the warden watches its status pipe instead, whose only reader is the kit, and
	// kills the tree when the kit is gone (a signal would kill it before it could).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := startOnSpawner(cmd); err != nil {
		statusR.Close()
		return nil, startError(s.python, err)
	}
	statusW.Close()
	l := &launched{supervisor: cmd.Process.Pid}
	if info, ok := readStat(l.supervisor); ok {
		l.supervisorStart = info.start
	}
	exit, gone := make(chan exitState, 1), make(chan struct{})
	l.exit, l.gone = exit, gone
	first := make(chan wardenMsg, 1)
	go readWarden(cmd, statusR, first, exit, gone)
	t := time.NewTimer(wardenAnswer)
	defer t.Stop()
	select {
	case m := <-first:
		if m.Kind == wardenStarted && m.PID > 0 {
			l.pid = m.PID
			return l, nil
		}
		<-gone
		if m.Kind == wardenError {
			return nil, startError(s.python, wardenFailure{m})
		}
		return nil, fmt.Errorf("run %s: the warden ended before it started the harness", s.python)
	case <-t.C:
		_ = cmd.Process.Kill()
		<-gone
		return nil, fmt.Errorf("run %s: the warden did not start the harness within %s", s.python, wardenAnswer)
	}
}

// wardenFailure is a start failure the warden reported.
type wardenFailure struct{ m wardenMsg }

func (w wardenFailure) Error() string { return w.m.Message }

// Unwrap gives the errno behind the failure, so that a reached process limit is recognised.
func (w wardenFailure) Unwrap() error {
	if w.m.Errno != 0 {
		return syscall.Errno(w.m.Errno)
	}
	return nil
}

// readWarden reads the warden's status lines: the first (started or error) goes to first, the harness's exit
// to exit; gone closes when the warden has exited and been reaped.
func readWarden(cmd *exec.Cmd, r *os.File, first chan<- wardenMsg, exit chan<- exitState, gone chan<- struct{}) {
	defer close(gone)
	sc := bufio.NewScanner(r)
	sentFirst, sentExit := false, false
	for sc.Scan() {
		var m wardenMsg
		if json.Unmarshal(sc.Bytes(), &m) != nil {
			continue
		}
		switch {
		case !sentFirst:
			first <- m
			sentFirst = true
		case m.Kind == wardenExit && !sentExit:
			exit <- exitState{status: syscall.WaitStatus(m.Status), known: true}
			sentExit = true
		}
	}
	r.Close()
	// The pipe ends when the warden exits (nothing else holds it): reap it.
	err := cmd.Wait()
	if !sentFirst {
		first <- wardenMsg{Kind: wardenError, Message: fmt.Sprintf("the warden ended before it started the harness: %v", err)}
	}
	if !sentExit {
		exit <- exitState{why: fmt.Errorf("its supervisor ended first (%v): exit status unknown", err)}
	}
}

// startError turns a failure to start a process into a clear message; a reached process limit (EAGAIN from
// fork) says so and what to do.
func startError(python string, err error) error {
	if errors.Is(err, syscall.EAGAIN) {
		return fmt.Errorf("run %s: cannot create a process: the limit on processes for this user is reached "+
			"(ulimit -u; a provider that forks without end reaches it too); end other processes or raise the limit: %w", python, err)
	}
	var w wardenFailure
	if errors.As(err, &w) {
		return err
	}
	return fmt.Errorf("run %s: %w", python, err)
}
