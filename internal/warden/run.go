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
	_ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
	proc, err := startCommand(args[0], args[1:], files)
	if err == nil && maxProcs > 0 {
		// Set at once after the start (Go cannot set a limit between fork and exec); an interpreter takes
		// milliseconds before it runs any code that could fork.
		lim := unix.Rlimit{Cur: maxProcs, Max: maxProcs}
		_ = unix.Prlimit(proc, unix.RLIMIT_NPROC, &lim, nil)
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
			report(msg{Kind: kindDone, Left: drainBelow()})
			return 0
		}
	}
}

// watchCaller watches, ten times a second, the caller (the warden's parent). When the caller is gone (the
// status pipe has no reader, which poll reports on the write end, however the caller ended) it kills
// everything below; the main loop then reaps and ends. When the caller is stopped by a signal other than its
// own job-control stop (see StopName), it continues it and calls stopped: a process of the command stopped it.
func watchCaller(statusFD, caller int, stopped func()) {
	fds := []unix.PollFd{{Fd: int32(statusFD)}}
	for {
		n, err := unix.Poll(fds, 100)
		if err == nil && n > 0 && fds[0].Revents&(unix.POLLERR|unix.POLLHUP) != 0 {
			killBelow(os.Getpid())
			return
		}
		if StoppedBySomeoneElse(caller) {
			_ = syscall.Kill(caller, syscall.SIGCONT)
			stopped()
		}
	}
}

// startCommand starts the command in its own session, dying with the warden.
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
		Sys: &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL},
	})
	if err != nil {
		return 0, fmt.Errorf("run %s: %w", name, err)
	}
	return proc.Pid, nil
}

// drainBelow kills every descendant of this process and reaps its children until none is left, and returns
// how many processes it killed. An orphan whose parent is killed becomes this process's child (it is a
// subreaper), so the loop ends with nothing left.
func drainBelow() int {
	self, killed := os.Getpid(), map[int]bool{}
	for {
		for _, pid := range killBelow(self) {
			killed[pid] = true
		}
		for {
			var ws syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			if errors.Is(err, syscall.EINTR) {
				continue
			}
			if err != nil {
				return len(killed) // ECHILD: no child left
			}
			if pid == 0 {
				break
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// killBelow sends SIGKILL to every live descendant of root and returns them.
func killBelow(root int) []int {
	pids := Below(root)
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	return pids
}
