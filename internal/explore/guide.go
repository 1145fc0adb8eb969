package explore

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/astrabox-dev/astrabox/internal/conformance"
	"github.com/astrabox-dev/astrabox/internal/coverage"
	"github.com/astrabox-dev/astrabox/internal/harness"
	"github.com/astrabox-dev/astrabox/internal/simulate"
)

// feature is one thing a scenario reached of the provider: a line or a branch direction of a file, as one
// callback ran it. Loading is left out: warm replicas load once for many scenarios.
type feature struct {
	key, path string
	n         int
	branch    bool
}

// features are what a history's callbacks reached.
func features(h *simulate.History) map[feature]bool {
	out := map[feature]bool{}
	var reports []*harness.CoverageReport
	for _, c := range h.Calls() {
		reports = append(reports, c.Coverage)
	}
	for _, c := range h.Coverage {
		reports = append(reports, c.Report)
	}
	for _, r := range reports {
		if r == nil {
			continue
		}
		for _, hit := range r.Hits {
			if hit.Key == coverage.KeyLoad {
				continue
			}
			for path, lines := range hit.Lines {
				for _, l := range lines {
					out[feature{hit.Key, path, l, false}] = true
				}
			}
			for path, dirs := range hit.Branches {
				for _, d := range dirs {
					out[feature{hit.Key, path, d, true}] = true
				}
			}
		}
	}
	return out
}

// guide returns the guide of an exploration, or nil when it runs blind: it replays given scenarios
// (--last-failed), or the replicas measure no coverage.
func (o *Options) guide(env *conformance.Env) (*guide, error) {
	if len(o.Scenarios) > 0 || o.Blind {
		return nil, nil
	}
	if env.Sim.Coverage == nil {
		if o.Log != nil && o.N > 0 {
			fmt.Fprintln(o.Log, "exploration runs blind (not guided by coverage): coverage of the provider is off;\n  --coverage turns it on")
		}
		return nil, nil
	}
	if o.CorpusDir == "" {
		o.CorpusDir = filepath.Join(env.Target.Project.Dir, ".astrabox", "corpus")
	}
	var saved []*simulate.Scenario
	if !o.Fresh {
		var skipped []string
		var err error
		if saved, skipped, err = loadCorpus(o.CorpusDir); err != nil {
			return nil, err
		}
		for _, s := range skipped {
			if o.Log != nil {
				fmt.Fprintf(o.Log, "warning: corpus seed %s is left out\n", s)
			}
		}
	}
	g := newGuide(o.Seed, saved)
	g.linesOnly = o.LinesOnly
	if o.LinesOnly {
		g.novel = nil
	} else {
		g.aim = newAim(implemented(env.Info))
	}
	return g, nil
}

// scenario is blind exploration's scenario number idx.
func (o *Options) scenario(idx int) *simulate.Scenario {
	if len(o.Scenarios) > 0 {
		return o.Scenarios[idx]
	}
	if o.Longer {
		return generateLong(o.Seed, idx)
	}
	return Generate(o.Seed, idx)
}

// runAll calls do(k) for k in [0, n) on jobs goroutines, stopping early when ctx ends.
func runAll(ctx context.Context, jobs, n int, do func(k int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for j := 0; j < jobs; j++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				k := int(next.Add(1)) - 1
				if k >= n || ctx.Err() != nil {
					return
				}
				do(k)
			}
		}()
	}
	wg.Wait()
}
