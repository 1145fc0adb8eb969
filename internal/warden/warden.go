// Package warden runs a command under a supervisor that none of its descendants can leave.
//
// The warden is a copy of the running binary (through /proc/self/exe, chosen by an environment variable that
// this package's init recognises) that stands between the caller and the command. It
//
//   - is a child subreaper (PR_SET_CHILD_SUBREAPER), so that every descendant of the command that loses its
//     parent (a double fork, setsid, an empty or overwritten environment: none of it matters) becomes the
//     warden's child;
//   - starts the command in a session of its own with no controlling terminal, dying with the warden
//     (PR_SET_PDEATHSIG), and reports its pid and its wait status on a status pipe;
//   - when the command has exited, kills every process left below it and reaps them until it has no child
//     left, reports how many it killed, and exits: the end of the status pipe means the whole tree is gone;
//   - dies with the caller, killing the tree first: the status pipe then has no reader, which poll reports
//     on the write end however the caller ended. (A parent-death signal would kill the warden before it
//     could clean up, and handling signals in Go costs four threads where this costs one: every thread counts
//     against the user's process limit, ulimit -u.)
//
// The command's parent is the warden, never the caller.
//
// On macOS (darwin) there is no subreaper, no parent-death signal, no /proc and no prlimit, and the warden
// keeps what it can with the platform's own means: the command leads its own session, and after it exits the
// warden kills every descendant it can still see by parent links (one sysctl listing) and every process left
// in the command's session (kern.proc.session), until none is left; it learns of the caller's end through
// kqueue (EVFILT_PROC, NOTE_EXIT) as well as the status pipe; the process limit is set on the warden itself
// (setrlimit) before the command starts, which inherits it. What is weaker: a descendant that both leaves
// the session (setsid) and loses its parent is out of the warden's sight (the harness's sweep still finds it
// by its replica token), the command does not die with a warden killed by SIGKILL, and a SIGSTOP sent to
// the kit is not undone (docs/platforms.md).
package warden

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// Var, set to "1" in the environment of the warden (the running binary again), makes the binary a warden (see init).
const Var = "ASTRABOX_WARDEN"

// The warden's descriptors: 0-2 and 3.. as the command gets them, then the status pipe to the caller.
type msg struct {
	Kind    string `json:"kind"` // kindStarted, kindError, kindExit or kindDone
	PID     int    `json:"pid,omitempty"`
	Status  int    `json:"status,omitempty"`
	Errno   int    `json:"errno,omitempty"`
	Left    int    `json:"left,omitempty"`
	Message string `json:"message,omitempty"`
}

const (
	kindStarted = "started"
	kindError   = "error"
	kindExit    = "exit"
	kindDone    = "done"
	kindStopped = "stopped"
)

// Spec is the command to run. Stdin, Stdout and Stderr are given to it as descriptors 0-2 (nil: /dev/null),
// ExtraFiles as 3 and up; the caller keeps its copies and closes them after Start.
type Spec struct {
	Path                  string   // looked up in the command's PATH when it has no slash
	Args                  []string // with Args[0], as for exec.Cmd (empty: Path alone)
	Dir                   string
	Env                   []string // the command's whole environment
	Stdin, Stdout, Stderr *os.File
	ExtraFiles            []*os.File
	// MaxProcs, when not 0, is the command's RLIMIT_NPROC (soft and hard), set as soon as it is started.
	MaxProcs uint64
}

// Exit is how the command ended: its wait status when the warden reaped it, or Known false (with Why) when
// the warden ended first.
type Exit struct {
	Status syscall.WaitStatus
	Known  bool
	Why    error
}

// Child is a command running under a warden.
type Child struct {
	// PID is the command's pid, also its process group and session.
	PID int
	// Warden is the warden's pid, and WardenStart its start time in clock ticks after boot (0 if unknown):
	// every descendant of the command is below it.
	Warden      int
	WardenStart uint64
	// Exit receives the command's exit, once.
	Exit <-chan Exit
	// Gone is closed when the warden has exited and been reaped: nothing of the command is left.
	Gone <-chan struct{}
	// Stopped is closed when the warden found the caller stopped by a signal (SIGSTOP from some process,
	// most likely one of the command's) and continued it.
	Stopped <-chan struct{}

	left    chan int
	stopped chan struct{}
}

// Left returns how many processes the warden had to kill after the command exited (those it left running),
// once Gone is closed; -1 when the warden did not say.
func (c *Child) Left() int {
	select {
	case n := <-c.left:
		c.left <- n
		return n
	default:
		return -1
	}
}

// StartTimeout bounds the wait for the warden to say it started the command (a Go start and a fork).
const StartTimeout = 30 * time.Second

// Start runs s under a warden. Errors wrap the errno of a failed fork or exec (EAGAIN when the user's process
// limit is reached, ENOENT when the command does not exist).
func Start(s Spec) (*Child, error) {
	statusR, statusW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("create pipe: %w", err)
	}
	defer statusW.Close()
	if len(s.Args) == 0 {
		s.Args = []string{s.Path}
	}
	cmd := exec.Command(selfExe(), append([]string{s.Path}, s.Args...)...)
	cmd.Args[0] = "astrabox-warden"
	cmd.Dir = s.Dir
	if s.Stdin != nil {
		cmd.Stdin = s.Stdin
	}
	if s.Stdout != nil {
		cmd.Stdout = s.Stdout
	}
	if s.Stderr != nil {
		cmd.Stderr = s.Stderr
	}
	cmd.ExtraFiles = append(append([]*os.File(nil), s.ExtraFiles...), statusW)
	cmd.Env = append(append([]string(nil), s.Env...), fmt.Sprintf("%s=1:%d:%d", Var, 3+len(s.ExtraFiles), s.MaxProcs))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		statusR.Close()
		return nil, err
	}
	statusW.Close()
	exit, gone, first := make(chan Exit, 1), make(chan struct{}), make(chan msg, 1)
	stopped := make(chan struct{})
	c := &Child{Warden: cmd.Process.Pid, Exit: exit, Gone: gone, Stopped: stopped, left: make(chan int, 1), stopped: stopped}
	if st, ok := readStat(c.Warden); ok {
		c.WardenStart = st.start
	}
	go c.read(cmd, statusR, first, exit, gone)
	t := time.NewTimer(StartTimeout)
	defer t.Stop()
	select {
	case m := <-first:
		if m.Kind == kindStarted && m.PID > 0 {
			c.PID = m.PID
			return c, nil
		}
		<-gone
		return nil, &startError{msg: m.Message, errno: syscall.Errno(m.Errno)}
	case <-t.C:
		_ = cmd.Process.Kill()
		<-gone
		return nil, fmt.Errorf("the warden did not start %s within %s", s.Path, StartTimeout)
	}
}

// startError is a failure the warden reported: its message, and the errno behind it (0 if none).
type startError struct {
	msg   string
	errno syscall.Errno
}

func (e *startError) Error() string { return e.msg }

func (e *startError) Unwrap() error {
	if e.errno == 0 {
		return nil
	}
	return e.errno
}

// read reads the warden's status lines: the first (started or error) goes to first, the command's exit to
// exit; gone closes when the warden has exited and been reaped.
func (c *Child) read(cmd *exec.Cmd, r *os.File, first chan<- msg, exit chan<- Exit, gone chan<- struct{}) {
	defer close(gone)
	sc := bufio.NewScanner(r)
	sentFirst, sentExit, left := false, false, -1
	for sc.Scan() {
		var m msg
		if json.Unmarshal(sc.Bytes(), &m) != nil {
			continue
		}
		switch {
		case !sentFirst:
			first <- m
			sentFirst = true
		case m.Kind == kindExit && !sentExit:
			exit <- Exit{Status: syscall.WaitStatus(m.Status), Known: true}
			sentExit = true
		case m.Kind == kindDone:
			left = m.Left
		case m.Kind == kindStopped:
			select {
			case <-c.stopped:
			default:
				close(c.stopped)
			}
		}
	}
	r.Close()
	// The pipe ends when the warden exits (nothing else holds it): reap it.
	err := cmd.Wait()
	c.left <- left
	if !sentFirst {
		first <- msg{Kind: kindError, Message: fmt.Sprintf("the warden ended before it started the command: %v", err)}
	}
	if !sentExit {
		exit <- Exit{Why: fmt.Errorf("its warden ended first (%v): exit status unknown", err)}
	}
}
