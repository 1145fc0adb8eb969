package simulate

import (
	"fmt"
	"sync"

	"github.com/astrabox-dev/astrabox/internal/harness"
)

// HangLatch is shared by the scenarios of one run: the first callback that hangs (blocks its replica's event
// loop through its deadline, so that the replica is killed) trips it, and every scenario of the run then
// stops at its next step boundary instead of waiting out each further hang's deadline again. The finding is
// made once; a provider that hangs would only repeat it, each time at the cost of a full deadline and grace.
// The zero value is not ready: use NewHangLatch.
type HangLatch struct {
	once  sync.Once
	done  chan struct{}
	mu    sync.Mutex
	first string
}

// NewHangLatch returns an untripped latch.
func NewHangLatch() *HangLatch { return &HangLatch{done: make(chan struct{})} }

// trip records the first hang: which callback, in which scenario and step.
func (l *HangLatch) trip(what string) {
	l.once.Do(func() {
		l.mu.Lock()
		l.first = what
		l.mu.Unlock()
		close(l.done)
	})
}

// Tripped reports whether some callback of the run hung.
func (l *HangLatch) Tripped() bool {
	if l == nil {
		return false
	}
	select {
	case <-l.done:
		return true
	default:
		return false
	}
}

// First describes the first hang ("prepare_session in scenario sessions, step 4"), or "".
func (l *HangLatch) First() string {
	if l == nil {
		return ""
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.first
}

// StoppedByHang is the History.Aborted prefix of a scenario cut short because a callback of the run hung.
const StoppedByHang = "stopped: a callback of the provider hung"

// noteHang trips the run's latch when rec is a callback whose replica was killed for blocking its event loop.
func (p *platform) noteHang(rec *CallRecord) {
	if p.o.Hang == nil || rec.Outcome != OutcomeDied || rec.ProcessKind != string(harness.KindHung) {
		return
	}
	p.o.Hang.trip(fmt.Sprintf("%s in scenario %s, step %d", rec.Method, p.sc.Name, p.step))
}
