package explore

import (
	"context"
	"sync"

	"github.com/astrabox-dev/astrabox/internal/conformance"
	"github.com/astrabox-dev/astrabox/internal/simulate"
)

// window is how many scenarios of a guided exploration are chosen ahead of the corpus: scenario k is chosen
// right after the history of scenario k-window has been observed, so that up to window scenarios run at
// once, and every choice but the first window's already knows what all but the last window-1 scenarios
// reached.
const window = 4

// guided explores scenario by scenario: the workers judge the chosen scenarios in any order, but their
// histories are observed strictly in index order, and scenario k is chosen exactly when scenario k-window
// has been observed. So the corpus every choice sees is fixed by the seed and the saved corpus alone, and the
// run is the same whatever the number of jobs and whichever worker finishes first.
func guided(ctx context.Context, env *conformance.Env, w *conformance.Workers, o Options, g *guide, indexes []int, jobs int, t *tally) {
	n := len(indexes)
	p := &pipeline{scs: make([]*simulate.Scenario, n), hists: make([]*simulate.History, n), done: make([]bool, n)}
	p.cond = sync.NewCond(&p.mu)
	choose := func(k int) {
		p.scs[k] = g.next(indexes[k])
		env.Adjust(p.scs[k])
		p.queue = append(p.queue, k)
	}
	for k := 0; k < min(window, n); k++ {
		choose(k)
	}
	var wg sync.WaitGroup
	for j := 0; j < jobs; j++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				k, ok := p.take(ctx, t)
				if !ok {
					return
				}
				sc := p.scs[k]
				ids, msgs, h, err := judge(ctx, env, w, sc, o)
				t.add(indexes[k], sc, ids, msgs, h, err)
				if o.StopAfterFailure && len(ids) > 0 {
					t.failedAt(k)
				}
				p.finish(k, h, func(i int) {
					if p.hists[i] != nil {
						g.share.joined(indexes[i], g.observe(p.scs[i], p.hists[i]))
					}
					if i+window < n && !t.beyond(i+window) {
						choose(i + window)
					}
					t.reached.Store(int64(g.covered))
				})
			}
		}()
	}
	wg.Wait()
}

// pipeline is the state guided exploration's workers share: the chosen scenarios, the queue of those not
// yet taken, and the judged histories waiting for their turn to be observed.
type pipeline struct {
	mu       sync.Mutex
	cond     *sync.Cond
	scs      []*simulate.Scenario
	hists    []*simulate.History
	done     []bool
	queue    []int
	observed int
}

// take waits for a chosen scenario to judge; false when none is left (none before the failure exploration
// stops at) or ctx ended.
func (p *pipeline) take(ctx context.Context, t *tally) (int, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for {
		for len(p.queue) > 0 && t.beyond(p.queue[0]) {
			p.queue = p.queue[1:]
		}
		if len(p.queue) > 0 || p.observed >= len(p.done) || t.beyond(p.observed) || ctx.Err() != nil {
			break
		}
		p.cond.Wait()
	}
	if len(p.queue) == 0 || ctx.Err() != nil {
		p.cond.Broadcast()
		return 0, false
	}
	k := p.queue[0]
	p.queue = p.queue[1:]
	return k, true
}

// finish records scenario k's history (nil when it could not run) and calls observe for every scenario,
// in index order, whose predecessors have all been judged; it then wakes the waiting workers.
func (p *pipeline) finish(k int, h *simulate.History, observe func(i int)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.hists[k], p.done[k] = h, true
	for p.observed < len(p.done) && p.done[p.observed] {
		i := p.observed
		observe(i)
		p.hists[i] = nil // memory stays flat: a history is dropped once observed
		p.observed++
	}
	p.cond.Broadcast()
}
