package conformance

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// TraceEnv names the developer knob that prints a run's timeline: with ASTRABOX_TRACE=1 in the environment,
// Open, Suite and the workers write one line per phase to standard error ("astrabox trace: +123.4 ms
// resolve: interpreter"), the time since Open began first (docs/performance.md, "Where the default suite's
// wall time goes"). It changes nothing else: no verdict reads it.
const TraceEnv = "ASTRABOX_TRACE"

// tracer writes the timeline of one run; a nil tracer writes nothing.
type tracer struct {
	start time.Time
	mu    sync.Mutex
	w     io.Writer
}

// newTracer returns the run's tracer, or nil when TraceEnv is not set.
func newTracer(getenv func(string) string) *tracer {
	if getenv == nil {
		getenv = os.Getenv
	}
	if getenv(TraceEnv) == "" {
		return nil
	}
	return &tracer{start: time.Now(), w: os.Stderr}
}

// mark writes one line of the timeline.
func (t *tracer) mark(format string, args ...any) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	fmt.Fprintf(t.w, "astrabox trace: +%7.1f ms %s\n", float64(time.Since(t.start).Microseconds())/1000, fmt.Sprintf(format, args...))
}
