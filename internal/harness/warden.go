package harness

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The warden is the supervisor of a harness started as its own interpreter (no fork server): a copy of this
// binary, run through /proc/self/exe with wardenVar set, that stands between the kit and the harness. It
//
//   - is a child subreaper (PR_SET_CHILD_SUBREAPER), so that every descendant of the harness that loses its
//     parent (double fork, setsid, an empty environment: none of it matters) becomes the warden's child;
//   - starts the harness in a session of its own with no controlling terminal, dying with the warden
//     (PR_SET_PDEATHSIG), and reports its pid and its wait status on a pipe;
//   - when the harness has exited, kills every process left below it and reaps them until it has no child
//     left, then exits: the end of the pipe means the whole tree is gone;
//   - dies with the kit, killing the tree first: its status pipe has no reader any more (poll reports an
//     error on the write end), however the kit ended. This costs one thread where signal handling would cost
//     four (every thread counts against the user's process limit, ulimit -u).
//
// The fork server's children play the same part for forked harnesses (zygote.py).

// wardenVar, set to "1" in the environment of /proc/self/exe, makes this binary a warden.
const wardenVar = "ASTRABOX_HARNESS_WARDEN"

// The warden's descriptors: 0-2 and 3-4 as the harness gets them, 5 the status pipe to the kit.
const wardenStatusFD = 5

// wardenMsg is one line the warden writes on its status pipe.
type wardenMsg struct {
	Kind    string `json:"kind"` // wardenStarted, wardenError or wardenExit
	PID     int    `json:"pid,omitempty"`
	Status  int    `json:"status,omitempty"`
	Errno   int    `json:"errno,omitempty"`
	Message string `json:"message,omitempty"`
}

const (
	wardenStarted = "started"
	wardenError   = "error"
	wardenExit    = "exit"
)

func init() {
	if os.Getenv(wardenVar) == "1" {
		os.Exit(runWarden(os.Args[1:]))
	}
}

// runWarden is the warden's main: args are the harness's command line (interpreter first).
func runWarden(args []string) int {
	// The harness's parent-death signal follows the thread that forked it. The Go runtime retires a thread
	// only when a goroutine locked to it ends, which none here does, but say so plainly.
	runtime.LockOSThread()
	status := os.NewFile(wardenStatusFD, "status")
	report := func(m wardenMsg) {
		b, _ := json.Marshal(m)
		_, _ = status.Write(append(b, '\n'))
	}
	for _, fd := range []int{3, 4, wardenStatusFD} {
		syscall.CloseOnExec(fd)
	}
	if len(args) == 0 {
		report(wardenMsg{Kind: wardenError, Message: "the warden was given no command"})
		return 2
	}
	_ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)

	env := make([]string, 0, len(os.Environ()))
	for _, kv := range os.Environ() {
		if len(kv) < len(wardenVar)+1 || kv[:len(wardenVar)+1] != wardenVar+"=" {
			env = append(env, kv)
		}
	}
	dir, _ := os.Getwd()
	path := args[0]
	if !strings.Contains(path, "/") {
		if found, err := exec.LookPath(path); err == nil {
			path = found
		}
	}
	proc, err := os.StartProcess(path, args, &os.ProcAttr{
		Dir: dir, Env: env,
		Files: []*os.File{os.Stdin, os.Stdout, os.Stderr, os.NewFile(3, "req"), os.NewFile(4, "resp")},
		Sys:   &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL},
	})
	if err != nil {
		m := wardenMsg{Kind: wardenError, Message: fmt.Sprintf("run %s: %v", args[0], err)}
		var errno syscall.Errno
		if errors.As(err, &errno) {
			m.Errno = int(errno)
		}
		report(m)
		return 1
	}
	harness := proc.Pid
	// Let go of the harness's descriptors, so that only it (and what it starts) holds its pipes.
	if null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0); err == nil {
		for _, fd := range []int{0, 1, 2} {
			_ = unix.Dup2(int(null.Fd()), fd)
		}
		null.Close()
	}
	_ = syscall.Close(3)
	_ = syscall.Close(4)
	report(wardenMsg{Kind: wardenStarted, PID: harness})
	// The kit's death: kill everything below; the loop below reaps and then ends.
	go func() {
		fds := []unix.PollFd{{Fd: wardenStatusFD}}
		for {
			if _, err := unix.Poll(fds, -1); err == nil && fds[0].Revents&(unix.POLLERR|unix.POLLHUP) != 0 {
				killBelow(os.Getpid())
				return
			}
		}
	}()
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return 0 // no child at all: nothing below is left
		}
		if pid == harness {
			report(wardenMsg{Kind: wardenExit, PID: harness, Status: int(ws)})
			drainBelow()
			return 0
		}
	}
}

// drainBelow kills every descendant of this process and reaps its children until none is left. An orphan
// whose parent is killed becomes this process's child (it is a subreaper), so the loop ends with nothing left.
func drainBelow() {
	self := os.Getpid()
	for {
		killBelow(self)
		for {
			var ws syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			if errors.Is(err, syscall.EINTR) {
				continue
			}
			if err != nil {
				return // ECHILD: no child left
			}
			if pid == 0 {
				break
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// killBelow sends SIGKILL to every live descendant of root (found through the parent links in /proc).
func killBelow(root int) {
	for _, pid := range descendants(root) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}
