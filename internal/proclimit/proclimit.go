// Package proclimit measures the user's process limit (RLIMIT_NPROC, `ulimit -u`) against what is in use, so
// that the kit refuses, with a message that says what to do, to start a process that would leave too little
// room for its own threads.
//
// The limit counts every task (process and thread) whose real user is the kit's user, across the machine. The
// Go runtime aborts the whole program when it cannot create a thread (`pthread_create failed`), which no code
// can catch; so the room the kit needs is checked before each start, not discovered by a crash. The kernel
// exempts the root user and processes holding CAP_SYS_RESOURCE or CAP_SYS_ADMIN: for them the limit is
// unbounded.
//
// On macOS the limit (kern.maxprocperuid, `ulimit -u`) counts processes, not threads, and is measured with
// one sysctl listing of the user's processes; only root is exempt there.
package proclimit

import (
	"bufio"
	"bytes"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// Reserve is the room (tasks) that must be left before the kit starts a harness: the harness's own threads, the
// warden's, and the threads the Go runtime may add while it waits on them (measured: a harness under a warden
// costs about eight tasks; docs/troubleshooting.md).
const Reserve = 8

// Floor is the room the kit needs to run at all (the Go runtime's own threads), checked as it starts.
const Floor = 8

// RunFloor is the room a run needs before its first harness starts: the replicas of a scenario (up to three),
// their wardens and threads, the fork server, and the kit's threads waiting on them (a conformance run of the
// reference provider peaks at about 20 tasks of its own). Checked once, before anything is started, it makes
// the verdict independent of the limit: a run that starts has room to finish, rather than a provider's
// thread or fork failing mid-run for want of room (which would be blamed on the provider).
const RunFloor = 40

// Room is the process limit and its use.
type Room struct {
	// Bounded is false when the limit does not apply: no limit, the root user, or a process that holds
	// CAP_SYS_RESOURCE or CAP_SYS_ADMIN. Limit and Used are then 0.
	Bounded bool
	// Limit is the soft RLIMIT_NPROC; Used is how many tasks the user has.
	Limit, Used uint64
}

// Free is the number of tasks the user may still create (0 when over the limit); unbounded room has no end.
func (r Room) Free() uint64 {
	if !r.Bounded {
		return ^uint64(0)
	}
	if r.Used >= r.Limit {
		return 0
	}
	return r.Limit - r.Used
}

// Current measures the room now.
func Current() Room {
	var rl unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NPROC, &rl) != nil || rl.Cur == unix.RLIM_INFINITY || exempt() {
		return Room{}
	}
	return Room{Bounded: true, Limit: rl.Cur, Used: tasksOf(os.Getuid())}
}

// RaiseSoft raises the soft limit to the hard one (as the Go runtime does for open files): a soft limit below
// the hard one is a default nobody chose for the kit. Errors are ignored: the limit simply stays.
func RaiseSoft() {
	var rl unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NPROC, &rl) == nil && rl.Cur < rl.Max {
		rl.Cur = rl.Max
		_ = unix.Setrlimit(unix.RLIMIT_NPROC, &rl)
	}
}

// Error is a refusal to start what would exhaust the limit. Its exit code is 2 (nothing was decided).
type Error struct {
	// What was not started ("a harness for replica r2", "astrabox").
	What string
	// Room is the room measured; Need the room the start needs.
	Room Room
	Need uint64
}

// Error says what was refused, the numbers, and what to do.
func (e *Error) Error() string {
	return fmt.Sprintf("cannot start %s: the limit on processes for this user (ulimit -u %d) leaves room for %d "+
		"more processes and threads (%d in use), and the kit needs %d to start it and keep its own threads; "+
		"raise the limit (ulimit -u %d or more; a run with three replicas uses about 30) or end other processes",
		e.What, e.Room.Limit, e.Room.Free(), e.Room.Used, e.Need, max(e.Room.Limit+e.Need, 64))
}

// ExitCode is 2: the run decided nothing.
func (e *Error) ExitCode() int { return 2 }

// Ensure returns an *Error when the room now is less than need, else nil.
func Ensure(what string, need uint64) error {
	if r := Current(); r.Free() < need {
		return &Error{What: what, Room: r, Need: need}
	}
	return nil
}

// field returns the value of the status line starting with key, trimmed.
func field(status []byte, key string) (string, bool) {
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		line := sc.Bytes()
		if bytes.HasPrefix(line, []byte(key)) {
			return string(bytes.TrimSpace(line[len(key):])), true
		}
	}
	return "", false
}

func firstWord(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] == ' ' || s[i] == '\t' {
			return s[:i]
		}
	}
	return s
}
