package warden

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

func init() {
	if v, ok := os.LookupEnv(Var); ok && strings.HasPrefix(v, "1:") {
		os.Exit(run(v, os.Args[1:]))
	}
}

// commandPID is the command's pid once started (its session), for the stragglers of a caller that ended.
var commandPID int

// run is the warden's main. v is "1:<status fd>:<max procs>"; args are the command's path, then its argv.
func run(v string, args []string) int {
	// The command's parent-death signal follows the thread that forked it. The Go runtime retires a thread
	// only when a goroutine locked to it ends, which none here does, but say so plainly.
	runtime.LockOSThread()
	var statusFD int
	var maxProcs uint64
	_, err := fmt.Sscanf(v, "1:%d:%d", &statusFD, &maxProcs)
	if err != nil || statusFD < 3 || len(args) < 2 {
		fmt.Fprintln(os.Stderr, "astrabox warden: started by hand, or by a different astrabox")
		return 2
	}
	status := os.NewFile(uintptr(statusFD), "status")
	report := func(m msg) {
		b, _ := json.Marshal(m)
		_, _ = status.Write(append(b, '\n'))
	}
	files := []*os.File{os.Stdin, os.Stdout, os.Stderr}
	for fd := 3; fd <= statusFD; fd++ {
		syscall.CloseOnExec(fd)
		if fd < statusFD {
			files = append(files, os.NewFile(uintptr(fd), "extra"))
		}
	}
	beforeStart(maxProcs)
	proc, err := startCommand(args[0], args[1:], files)
	if err == nil && maxProcs > 0 {
		afterStart(proc, maxProcs)
	}
	if err != nil {
		m := msg{Kind: kindError, Message: err.Error()}
		var errno syscall.Errno
		if errors.As(err, &errno) {
			m.Errno = int(errno)
		}
		report(m)
		return 1
	}
	// Let go of the command's descriptors, so that only it (and what it starts) holds its pipes.
	if null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0); err == nil {
		for _, fd := range []int{0, 1, 2} {
			_ = unix.Dup2(int(null.Fd()), fd)
		}
		null.Close()
	}
	for _, f := range files[3:] {
		f.Close()
	}
	commandPID = proc
	report(msg{Kind: kindStarted, PID: proc})
	go watchCaller(statusFD, os.Getppid(), func() { report(msg{Kind: kindStopped}) })
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return 0 // no child at all: nothing below is left
		}
		if pid == proc {
			report(msg{Kind: kindExit, PID: proc, Status: int(ws)})
			report(msg{Kind: kindDone, Left: drainBelow(proc)})
			return 0
		}
	}
}

// watchCaller watches, ten times a second, the caller (the warden's parent). When the caller is gone (the
// status pipe has no reader, which poll reports on the write end, however the caller ended; the warden's
// parent is no longer the caller; or the platform's own exit notice, see exitNotice) it kills everything
// below; the main loop then reaps and ends. When the caller is stopped by a signal other than its
// own job-control stop (see StopName), it continues it and calls stopped: a process of the command stopped it.
func watchCaller(statusFD, caller int, stopped func()) {
	fds := []unix.PollFd{{Fd: int32(statusFD)}}
	exited := exitNotice(caller)
	for {
		n, err := unix.Poll(fds, 100)
		hup := err == nil && n > 0 && fds[0].Revents&(unix.POLLERR|unix.POLLHUP) != 0
		select {
		case <-exited:
			hup = true
		default:
		}
		if hup || os.Getppid() != caller {
			killStragglers()
			return
		}
		if StoppedBySomeoneElse(caller) {
			_ = syscall.Kill(caller, syscall.SIGCONT)
			stopped()
		}
	}
}

// startCommand starts the command in its own session (dying with the warden where the platform can: see
// commandAttr).
func startCommand(path string, argv []string, files []*os.File) (int, error) {
	name := path
	if !strings.Contains(path, "/") {
		if found, err := exec.LookPath(path); err == nil {
			path = found
		}
	}
	env := make([]string, 0, len(os.Environ()))
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, Var+"=") {
			env = append(env, kv)
		}
	}
	dir, _ := os.Getwd()
	proc, err := os.StartProcess(path, argv, &os.ProcAttr{
		Dir: dir, Env: env, Files: files,
		Sys: commandAttr(),
	})
	if err != nil {
		return 0, fmt.Errorf("run %s: %w", name, err)
	}
	return proc.Pid, nil
}

// drainBelow kills every process left of the command (see stragglers) and reaps this process's children
// until it has none and no straggler is left, and returns how many processes it killed. On Linux an orphan
// whose parent is killed becomes this process's child (it is a subreaper), so the loop ends with nothing
// left; on macOS killed orphans belong to launchd, and the loop waits until the listing no longer shows them,
// at most drainBound.
func drainBelow(cmd int) int {
	self, killed := os.Getpid(), map[int]bool{}
	end := time.Now().Add(drainBound)
	for {
		pids := stragglers(self, cmd)
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			killed[pid] = true
		}
		noChild := false
		for {
			var ws syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			if errors.Is(err, syscall.EINTR) {
				continue
			}
			if err != nil {
				noChild = true // ECHILD: no child left
				break
			}
			if pid == 0 {
				break
			}
		}
		if noChild && (len(pids) == 0 || time.Now().After(end)) {
			return len(killed)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// drainBound bounds the wait for killed processes that are not the warden's children to be gone.
const drainBound = 10 * time.Second

// killStragglers sends SIGKILL to every process left of the command (see stragglers), once.
func killStragglers() {
	for _, pid := range stragglers(os.Getpid(), commandPID) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}
