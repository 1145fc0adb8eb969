package harness

import (
	"errors"
	"fmt"
	"github.com/astrabox-dev/astrabox/internal/proclimit"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"

	"github.com/astrabox-dev/astrabox/internal/warden"
	"golang.org/x/sys/unix"
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
	zygoteEnv           []string // added to env by a fork server launch only
}

// exitState is how a harness ended: its wait status when its supervisor reaped it, or known=false (with why)
// when the supervisor was gone first.
type exitState struct {
	status syscall.WaitStatus
	known  bool
	why    error
}

// launched is a started harness: its pid (also its process group and session), the pid of the supervisor
// below which all its descendants stay (0 when there is none; the harness itself when forked by a fork server,
// since it is then its own subreaper), its exit, and the end of its tree, after which nothing of the harness
// is left.
type launched struct {
	pid, supervisor int
	exit            <-chan exitState
	gone            <-chan struct{}
	forked          bool // forked by a fork server
	// stopped is closed when the supervisor (or the fork server) found the kit stopped by a signal it did not
	// give itself, and continued it.
	stopped <-chan struct{}
	// supervisorStart is the supervisor's start time in clock ticks after boot (0 if unknown).
	supervisorStart uint64
	// drained, read once gone is closed, is true when the supervisor said it ended with nothing left below it
	// (a fork server says so once it has no child left but live harnesses): no sweep of /proc is needed.
	drained bool
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
// process start leaves behind; so does the job-control guard, which lets the wardens and the fork server tell
// the user's Ctrl-Z from a provider's SIGSTOP (see warden.GuardJobControl). Before either, the descriptors the
// kit inherited are kept from every process it starts (closeInheritedOnExec).
func init() {
	closeInheritedOnExec()
	warden.GuardJobControl()
	go func() {
		runtime.LockOSThread() // never unlocked: the thread lives as long as the kit
		for r := range spawnCh {
			r.done <- r.cmd.Start()
		}
	}()
}

// wardenLauncher starts the harness under a warden (package warden): a supervisor that is a subreaper, so
// that no descendant of the harness can leave its tree.
type wardenLauncher struct{}

func (wardenLauncher) launch(s launchSpec) (*launched, error) {
	c, err := warden.Start(warden.Spec{
		Path: s.python, Args: []string{s.python, "-B", s.script}, Dir: s.dir, Env: s.env,
		Stdout: s.pipes.outW, Stderr: s.pipes.errW, ExtraFiles: []*os.File{s.pipes.reqR, s.pipes.respW},
		MaxProcs: procsCap(),
	})
	if err != nil {
		return nil, startError(s.python, err)
	}
	// The exit is passed on before the end of the warden, in the order the warden reports them.
	exit, gone := make(chan exitState, 1), make(chan struct{})
	go func() {
		e := <-c.Exit
		exit <- exitState{status: e.Status, known: e.Known, why: e.Why}
		<-c.Gone
		close(gone)
	}()
	return &launched{pid: c.PID, supervisor: c.Warden, supervisorStart: c.WardenStart, exit: exit, gone: gone, stopped: c.Stopped}, nil
}

// runRoom is the room check of the kit's first process start, made once: the whole run needs room (see
// ensureRoom), and every start of a kit that lacked it is refused with the same error.
var runRoom = sync.OnceValue(func() error { return proclimit.Ensure("the harnesses of a run", proclimit.RunFloor) })

// ensureRoom refuses to start what would leave too little of the user's process limit: before the kit's first
// harness or fork server there must be room for the whole run (proclimit.RunFloor), and before each one room
// for itself and the kit's threads (proclimit.Reserve).
func ensureRoom(what string) error {
	if err := runRoom(); err != nil {
		return err
	}
	return proclimit.Ensure(what, proclimit.Reserve)
}

// procsCap is the RLIMIT_NPROC given to harnesses: the kit's own soft limit less a reserve, so that a
// provider that forks without end leaves the kit room for the threads and processes it needs to end it (the
// limit counts every process and thread of the user). The reserve is an eighth of the limit, at least
// proclimit.Reserve and at most 64. 0 means no cap: no limit, or one below 64, where the replicas and their
// threads need all of it (a conformance run uses about 30).
func procsCap() uint64 {
	var rl unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NPROC, &rl) != nil || rl.Cur == unix.RLIM_INFINITY || rl.Cur < 64 {
		return 0
	}
	return rl.Cur - min(max(rl.Cur/8, proclimit.Reserve), 64)
}

// startError turns a failure to start a process into a clear message; a reached process limit (EAGAIN from
// fork) says so and what to do.
func startError(python string, err error) error {
	if errors.Is(err, syscall.EAGAIN) {
		if strings.HasPrefix(err.Error(), "run ") {
			return fmt.Errorf("cannot create a process: the limit on processes for this user is reached "+
				"(ulimit -u; a provider that forks without end reaches it too); end other processes or raise the limit: %w", err)
		}
		return fmt.Errorf("run %s: cannot create a process: the limit on processes for this user is reached "+
			"(ulimit -u; a provider that forks without end reaches it too); end other processes or raise the limit: %w", python, err)
	}
	if strings.HasPrefix(err.Error(), "run ") {
		return err
	}
	return fmt.Errorf("run %s: %w", python, err)
}
