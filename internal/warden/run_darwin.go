package warden

import (
	"errors"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// selfExe is the running binary, to start as the warden (macOS has no /proc/self/exe).
func selfExe() string {
	if p, err := os.Executable(); err == nil {
		return p
	}
	return os.Args[0]
}

// beforeStart sets the warden's own RLIMIT_NPROC, which the command inherits: macOS cannot set another
// process's limit (no prlimit). The warden starts no other process.
func beforeStart(maxProcs uint64) {
	if maxProcs > 0 {
		lim := unix.Rlimit{Cur: maxProcs, Max: maxProcs}
		_ = unix.Setrlimit(unix.RLIMIT_NPROC, &lim)
	}
}

// afterStart has nothing to do on macOS (see beforeStart).
func afterStart(int, uint64) {}

// commandAttr starts the command in its own session; macOS has no parent-death signal.
func commandAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: true}
}

// stragglers are the warden's live descendants by parent links and the live members of the command's session
// (the command leads it): macOS has no subreaper, so an orphan belongs to launchd and only its session ties
// it to the command.
func stragglers(self, cmd int) []int {
	all, err := unix.SysctlKinfoProcSlice("kern.proc.all")
	if err != nil {
		return nil
	}
	below := descendants(self, darwinEntries(all))
	if cmd <= 0 {
		return below
	}
	sess, err := unix.SysctlKinfoProcSlice("kern.proc.session", cmd)
	if err != nil {
		return below
	}
	var members []int
	for _, e := range darwinEntries(sess) {
		if e.pid != os.Getpid() {
			members = append(members, e.pid)
		}
	}
	return union(below, members)
}

// exitNotice fires when pid exits, through kqueue (EVFILT_PROC, NOTE_EXIT); nil (never) when it cannot watch.
func exitNotice(pid int) <-chan struct{} {
	kq, err := unix.Kqueue()
	if err != nil {
		return nil
	}
	ev := unix.Kevent_t{Ident: uint64(pid), Filter: unix.EVFILT_PROC, Flags: unix.EV_ADD | unix.EV_ONESHOT, Fflags: unix.NOTE_EXIT}
	if _, err := unix.Kevent(kq, []unix.Kevent_t{ev}, nil, nil); err != nil {
		_ = unix.Close(kq)
		return nil
	}
	ch := make(chan struct{})
	go func() {
		defer unix.Close(kq)
		out := make([]unix.Kevent_t, 1)
		for {
			n, err := unix.Kevent(kq, nil, out, nil)
			if errors.Is(err, unix.EINTR) {
				continue
			}
			if err == nil && n > 0 {
				close(ch)
			}
			return
		}
	}()
	return ch
}
