package harness

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
)

// exited and signaled build raw wait statuses as wait(2) returns them.
func exited(code int) exitState { return exitState{status: syscall.WaitStatus(code << 8), known: true} }
func signaled(sig syscall.Signal) exitState {
	return exitState{status: syscall.WaitStatus(sig), known: true}
}

func TestClassify(t *testing.T) {
	hung := errors.New("no reply after cancel")
	proto := errors.New("frame larger than 64 MiB")
	unknown := errors.New("its supervisor ended before it: exit status unknown")
	tests := []struct {
		name   string
		facts  exitFacts
		kind   ErrorKind
		code   int
		signal string
		err    error
	}{
		{"exit status", exitFacts{exit: exited(3)}, KindExited, 3, "", nil},
		{"clean exit", exitFacts{exit: exited(0)}, KindExited, 0, "", nil},
		{"crash", exitFacts{exit: signaled(syscall.SIGSEGV)}, KindSignaled, -1, "SIGSEGV", nil},
		{"killed by someone else", exitFacts{exit: signaled(syscall.SIGKILL)}, KindSignaled, -1, "SIGKILL", nil},
		{"our kill wins over the signal", exitFacts{exit: signaled(syscall.SIGKILL), kill: killReason{kind: KindHung, err: hung, stack: "Thread 0x1"}}, KindHung, -1, "SIGKILL", hung},
		{"our kill wins over a protocol error", exitFacts{exit: signaled(syscall.SIGKILL), kill: killReason{kind: KindMemoryLimit}, protoErr: proto}, KindMemoryLimit, -1, "SIGKILL", nil},
		{"protocol error wins over the exit", exitFacts{exit: exited(1), protoErr: proto}, KindProtocol, 1, "", proto},
		{"status unknown", exitFacts{exit: exitState{why: unknown}}, KindExited, -1, "", unknown},
		{"status unknown, closed by us", exitFacts{exit: exitState{why: unknown}, kill: killReason{kind: KindClosed}}, KindClosed, -1, "", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.facts.replica, tc.facts.stderrTail = "r3", "tail"
			pe := classify(tc.facts)
			if pe.Kind != tc.kind || pe.ExitCode != tc.code || pe.Signal != tc.signal || !errors.Is(pe.Err, tc.err) || (tc.err == nil && pe.Err != nil) {
				t.Fatalf("got kind %q code %d signal %q err %v; want %q %d %q %v", pe.Kind, pe.ExitCode, pe.Signal, pe.Err, tc.kind, tc.code, tc.signal, tc.err)
			}
			if pe.Replica != "r3" || pe.StderrTail != "tail" {
				t.Errorf("replica %q tail %q", pe.Replica, pe.StderrTail)
			}
			if pe.Stack != tc.facts.kill.stack {
				t.Errorf("stack %q", pe.Stack)
			}
		})
	}
}

func TestStartErrorNamesTheProcessLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python (skipped under -short)")
	}
	err := startError("python3", &osError{syscall.EAGAIN})
	if !errors.Is(err, syscall.EAGAIN) {
		t.Fatalf("%v does not wrap EAGAIN", err)
	}
	for _, s := range []string{"run python3", "limit on processes", "ulimit -u"} {
		if !contains(err.Error(), s) {
			t.Errorf("%q does not say %q", err, s)
		}
	}
	err = startError("python3", fmt.Errorf("run python3: fork/exec /usr/bin/python3: %w", syscall.EAGAIN))
	if !contains(err.Error(), "ulimit -u") || strings.Count(err.Error(), "run python3") != 1 {
		t.Errorf("a warden's EAGAIN is not named: %v", err)
	}
	if err := startError("python3", errors.New("exec: not found")); contains(err.Error(), "ulimit") {
		t.Errorf("another failure blamed on the limit: %v", err)
	}
}

// osError wraps an errno as os/exec does.
type osError struct{ errno syscall.Errno }

func (e *osError) Error() string { return "fork/exec python3: " + e.errno.Error() }
func (e *osError) Unwrap() error { return e.errno }

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// TestClassifyMemoryBoundOverAHang: a provider that allocates on the event loop also blocks it, so its
// deadline may start the hang handling (kill reason KindHung) before the memory poller finds it over the
// bound and SIGKILLs it. The memory bound ended it: the error is KindMemoryLimit with the figures, and the
// stack taken for the hang is kept.
func TestClassifyMemoryBoundOverAHang(t *testing.T) {
	over := memoryOver{rss: 1100 << 20, limit: 1 << 30}
	for _, kill := range []killReason{{}, {kind: KindHung, err: errors.New("no reply after cancel"), stack: "Thread 0x1"}, {kind: KindMemoryLimit}} {
		pe := classify(exitFacts{exit: signaled(syscall.SIGKILL), kill: kill, memory: over})
		if pe.Kind != KindMemoryLimit || pe.ResidentBytes != over.rss || pe.MemoryLimitBytes != over.limit || pe.Stack != kill.stack {
			t.Errorf("kill %q: got %q rss %d limit %d stack %q", kill.kind, pe.Kind, pe.ResidentBytes, pe.MemoryLimitBytes, pe.Stack)
		}
		if !strings.Contains(pe.Error(), "resident size 1100 MiB exceeded the limit of 1024 MiB") {
			t.Errorf("kill %q: %v", kill.kind, pe)
		}
	}
	// A reason that is not about the process itself (the host closed it) is kept.
	if pe := classify(exitFacts{exit: signaled(syscall.SIGKILL), kill: killReason{kind: KindClosed}, memory: over}); pe.Kind != KindClosed {
		t.Errorf("closed by the host: %q", pe.Kind)
	}
}
