package warden

import (
	"bytes"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// StopName is the name (/proc/<pid>/comm) the caller gives itself while it stops for job control (Ctrl-Z,
// a background read of the terminal): a watcher then leaves it stopped. No other process can set a
// process's name, so a provider cannot pass its SIGSTOP off as the user's Ctrl-Z.
const StopName = "astrabox-tstp"

// StoppedBySomeoneElse reports whether pid is stopped by a signal (state T: not a debugger's trace stop)
// while it does not carry StopName.
func StoppedBySomeoneElse(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	open, shut := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || shut < open || shut+2 >= len(b) {
		return false
	}
	return b[shut+2] == 'T' && string(b[open+1:shut]) != StopName
}

var guardOnce sync.Once

// GuardJobControl makes the calling process stop for job control (SIGTSTP, SIGTTIN, SIGTTOU) under StopName,
// so that watchers (wardens, the fork server) tell the user's Ctrl-Z from a SIGSTOP some other process sent,
// which they undo. Safe to call more than once.
func GuardJobControl() {
	guardOnce.Do(func() {
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, syscall.SIGTSTP, syscall.SIGTTIN, syscall.SIGTTOU)
		go func() {
			for range ch {
				stopForJobControl()
			}
		}()
	})
}

// stopForJobControl names the process StopName, stops it, and after SIGCONT gives it its name back. The
// stop is sent to this thread (tgkill), which then takes it before it returns from the call: sent to the
// process, another thread could take it while this one ran on and gave the name back before the stop.
func stopForJobControl() {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	comm := "/proc/self/task/" + strconv.Itoa(os.Getpid()) + "/comm"
	name, err := os.ReadFile(comm)
	renamed := err == nil && os.WriteFile(comm, []byte(StopName), 0) == nil
	_ = unix.Tgkill(os.Getpid(), unix.Gettid(), syscall.SIGSTOP)
	if renamed {
		_ = os.WriteFile(comm, bytes.TrimRight(name, "\n"), 0)
	}
}
