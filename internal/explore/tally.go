package explore

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/astrabox-dev/astrabox/internal/conformance"
	"github.com/astrabox-dev/astrabox/internal/simulate"
)

// tally counts an exploration's judged scenarios as workers finish them: failures, errors, callbacks, and
// what was reached, for the result and the progress line.
type tally struct {
	mu      sync.Mutex
	failing []found
	errs    []string
	done    atomic.Int64
	nfail   atomic.Int64
	calls   atomic.Int64
	reached atomic.Int64
	// stopAt is where StopAfterFailure stops: the lowest position (in the shard's order) of a failing
	// scenario so far, or the number of positions.
	stopAt   atomic.Int64
	progress *progress
}

// failedAt lowers stopAt to position k.
func (t *tally) failedAt(k int) {
	for {
		cur := t.stopAt.Load()
		if int64(k) >= cur || t.stopAt.CompareAndSwap(cur, int64(k)) {
			return
		}
	}
}

// beyond tells whether position k comes after the failure exploration stops at.
func (t *tally) beyond(k int) bool { return int64(k) > t.stopAt.Load() }

// add takes one judged scenario (from any worker).
func (t *tally) add(idx int, sc *simulate.Scenario, ids []string, msgs map[string]string, h *simulate.History, err error) {
	if err != nil {
		t.mu.Lock()
		t.errs = append(t.errs, fmt.Sprintf("%s: %v", sc.Name, err))
		t.mu.Unlock()
	} else {
		t.calls.Add(int64(len(h.Calls())))
		if len(ids) > 0 {
			t.nfail.Add(1)
			t.mu.Lock()
			t.failing = append(t.failing, found{idx, sc, ids, msgs})
			t.mu.Unlock()
		}
	}
	t.progress.update(t.done.Add(1), t.nfail.Load(), t.calls.Load(), t.reached.Load())
}

// blind judges every scenario as the seed generates it, workers taking them as they go; it returns how many
// features they reached when coverage is measured (0 otherwise).
func blind(ctx context.Context, env *conformance.Env, w *conformance.Workers, o Options, indexes []int, jobs int, t *tally) int {
	seen := map[feature]bool{}
	var mu sync.Mutex
	runAll(ctx, jobs, len(indexes), func(k int) {
		if t.beyond(k) {
			return
		}
		idx := indexes[k]
		sc := o.scenario(idx)
		env.Adjust(sc)
		ids, msgs, h, err := judge(ctx, env, w, sc, o)
		if h != nil && env.Sim.Coverage != nil {
			fs := features(h)
			mu.Lock()
			for f := range fs {
				seen[f] = true
			}
			t.reached.Store(int64(len(seen)))
			mu.Unlock()
		}
		t.add(idx, sc, ids, msgs, h, err)
		if o.StopAfterFailure && len(ids) > 0 {
			t.failedAt(k)
		}
	})
	return len(seen)
}
