package harness

// phase is where a Process is in its life. It only moves forward.
type phase int

const (
	// phaseRunning: started (the hello may still be on its way) and usable.
	phaseRunning phase = iota
	// phaseStopping: the kit decided to stop it (a kill reason is recorded) or Close/Kill began; no new call.
	phaseStopping
	// phaseExited: the harness was reaped; its tree is being cleaned up.
	phaseExited
	// phaseGone: nothing of it is left (or the sweep gave up) and its ProcessError is known.
	phaseGone
)

// lifecycle is the state of a Process that more than one goroutine reads or writes, always under Process.mu.
type lifecycle struct {
	phase    phase
	closing  bool // Close or Kill was called
	kill     killReason
	protoErr error // a protocol violation seen by the reader
	// memory is the first resident size the poller found over the limit (zero: never), recorded even when
	// another reason to stop the process came first: the memory abort's SIGKILL is what ended it then.
	memory memoryOver
	exit   exitState
	// swept: the sweep that followed the exit left nothing of the process.
	swept bool
	// fatal is the process's error, set when phase reaches phaseGone; reported says it was returned once.
	fatal    *ProcessError
	reported bool
}

// advance moves the phase forward to to (never back).
func (l *lifecycle) advance(to phase) {
	if to > l.phase {
		l.phase = to
	}
}

// usable reports whether the process can take a call.
func (l *lifecycle) usable() bool { return l.phase == phaseRunning && !l.closing && l.kill.kind == "" }
