package warden

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// selfExe is the running binary, to start as the warden.
func selfExe() string { return "/proc/self/exe" }

// beforeStart makes the warden a child subreaper: every orphaned descendant of the command becomes its child.
func beforeStart(uint64) {
	_ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
}

// afterStart sets the command's RLIMIT_NPROC at once after the start (Go cannot set a limit between fork and
// exec); an interpreter takes milliseconds before it runs any code that could fork.
func afterStart(pid int, maxProcs uint64) {
	lim := unix.Rlimit{Cur: maxProcs, Max: maxProcs}
	_ = unix.Prlimit(pid, unix.RLIMIT_NPROC, &lim, nil)
}

// commandAttr starts the command in its own session, dying with the warden (a parent-death signal).
func commandAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
}

// stragglers are the warden's live descendants: as a subreaper it is the ancestor of every process the
// command left.
func stragglers(self, _ int) []int { return Below(self) }

// exitNotice is nil on Linux (a channel that never fires): the status pipe and the parent link suffice.
func exitNotice(int) <-chan struct{} { return nil }
