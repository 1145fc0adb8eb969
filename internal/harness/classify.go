package harness

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// killReason is why the kit stopped a process: the first reason recorded wins.
type killReason struct {
	kind  ErrorKind
	err   error
	stack string // the faulthandler dump taken before a hung process was killed
}

// exitFacts are the facts classify turns into a ProcessError: how the process ended, why the kit stopped it
// (if it did), the first protocol violation seen, and what it wrote last on stderr.
type exitFacts struct {
	replica    string
	exit       exitState
	kill       killReason
	protoErr   error
	memory     memoryOver
	stderrTail string
}

// memoryOver is a resident size found over the memory limit, in bytes.
type memoryOver struct {
	rss, limit uint64
}

// classify decides the ProcessError of a process that is gone. A reason the kit recorded before it stopped
// the process comes first (it is what went wrong first), then a protocol violation, then the exit itself: a
// signal it did not get from us, or an exit. It is a pure function of its facts.
func classify(f exitFacts) *ProcessError {
	pe := &ProcessError{Replica: f.replica, ExitCode: -1, StderrTail: lastBytes(f.stderrTail, tailForError)}
	signaled := false
	if ws := f.exit.status; f.exit.known {
		switch {
		case ws.Exited():
			pe.ExitCode = ws.ExitStatus()
		case ws.Signaled():
			signaled = true
			pe.Signal = unix.SignalName(ws.Signal())
			if pe.Signal == "" {
				pe.Signal = ws.Signal().String()
			}
		}
	}
	switch {
	case f.memory.rss > 0 && (f.kill.kind == "" || f.kill.kind == KindHung || f.kill.kind == KindMemoryLimit):
		// The memory bound ended the process, even when a hang was being handled when the poller found it
		// (a provider that allocates on the event loop also blocks it): the memory is what to report.
		pe.Kind, pe.Stack = KindMemoryLimit, f.kill.stack
		pe.ResidentBytes, pe.MemoryLimitBytes = f.memory.rss, f.memory.limit
		pe.Err = fmt.Errorf("resident size %d MiB exceeded the limit of %d MiB", f.memory.rss>>20, f.memory.limit>>20)
	case f.kill.kind != "":
		pe.Kind, pe.Err, pe.Stack = f.kill.kind, f.kill.err, f.kill.stack
	case f.protoErr != nil:
		pe.Kind, pe.Err = KindProtocol, f.protoErr
	case signaled:
		pe.Kind = KindSignaled
	default:
		pe.Kind = KindExited
		if !f.exit.known {
			pe.Err = f.exit.why
		}
	}
	return pe
}
