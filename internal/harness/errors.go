package harness

import (
	"fmt"
	"strings"
)

// ErrorKind classifies why a harness process failed to answer.
type ErrorKind string

// The kinds of [ProcessError].
const (
	// KindStart: the interpreter could not be started at all (not found, not
	// executable).
	KindStart ErrorKind = "start"
	// KindExited: the process exited by itself (for example os._exit, or a
	// python that is not the harness) before it answered.
	KindExited ErrorKind = "exited"
	// KindSignaled: the process was killed by a signal it did not get from us
	// (for example SIGSEGV from a crash in native code).
	KindSignaled ErrorKind = "signaled"
	// KindHung: the process did not settle in time: no hello within
	// Limits.StartTimeout, no reply within Limits.Grace after cancel (a blocked
	// event loop), or no exit within Limits.CloseTimeout after shutdown. Stack
	// holds the faulthandler dump when one could be collected.
	KindHung ErrorKind = "hung"
	// KindMemoryLimit: the resident size of the process tree exceeded
	// Limits.MemoryRSS and the group was killed.
	KindMemoryLimit ErrorKind = "memory-limit"
	// KindProtocol: the harness broke the protocol: a garbage or oversized
	// frame, a closed reply channel, a wrong protocol version or cookie, or an
	// unexpected message.
	KindProtocol ErrorKind = "protocol"
	// KindClosed: the process was closed or killed by the host (Close, Kill)
	// or died earlier; the Process cannot be used any more.
	KindClosed ErrorKind = "closed"
)

// ProcessError reports that the harness process did not answer. It is
// returned (wrapped or not) by Start, Load and Call; use errors.As.
type ProcessError struct {
	// Kind says what happened.
	Kind ErrorKind
	// Replica is the replica name from Options.
	Replica string
	// Call is the method in flight, or "" (start, close).
	Call string
	// ExitCode is the exit status when the process exited, else -1.
	ExitCode int
	// Signal is the name of the signal that killed the process, if any
	// ("SIGSEGV", "SIGKILL").
	Signal string
	// Stack is the faulthandler dump of all threads, collected with SIGUSR1
	// before a hung process was killed.
	Stack string
	// StderrTail is the last part of the process's stderr (bounded).
	StderrTail string
	// Err is the underlying cause, when there is one.
	Err error
	// ResidentBytes and MemoryLimitBytes are, for KindMemoryLimit, the resident size of the process tree
	// the kit found and the limit it exceeded.
	ResidentBytes, MemoryLimitBytes uint64
}

// Error describes the failure in one line followed by the stderr tail, if any.
func (e *ProcessError) Error() string {
	var b strings.Builder
	b.WriteString("harness")
	if e.Replica != "" {
		fmt.Fprintf(&b, " %s", e.Replica)
	}
	if e.Call != "" {
		fmt.Fprintf(&b, " (call %s)", e.Call)
	}
	b.WriteString(": ")
	b.WriteString(e.summary())
	if e.Err != nil {
		fmt.Fprintf(&b, ": %v", e.Err)
	}
	if t := strings.TrimSpace(e.StderrTail); t != "" {
		fmt.Fprintf(&b, "\nstderr (tail):\n%s", indent(t))
	}
	return b.String()
}

func (e *ProcessError) summary() string {
	switch e.Kind {
	case KindStart:
		return "python could not be started"
	case KindExited:
		return fmt.Sprintf("process exited with status %d", e.ExitCode)
	case KindSignaled:
		return fmt.Sprintf("process was killed by signal %s", e.Signal)
	case KindHung:
		return "process did not settle in time and was killed"
	case KindMemoryLimit:
		return "process exceeded the memory limit and was killed"
	case KindProtocol:
		return "harness protocol corrupted; process killed"
	case KindClosed:
		return "process is closed"
	}
	return string(e.Kind)
}

// Unwrap returns the underlying cause.
func (e *ProcessError) Unwrap() error { return e.Err }

func indent(s string) string {
	return "  " + strings.ReplaceAll(s, "\n", "\n  ")
}
