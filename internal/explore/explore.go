package explore

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/astrabox-dev/astrabox/internal/conformance"
	"github.com/astrabox-dev/astrabox/internal/coverage"
	"github.com/astrabox-dev/astrabox/internal/simulate"
)

// Options configure an exploration.
type Options struct {
	// N is the number of generated scenarios (before sharding).
	N int
	// Seed selects the generated scenarios.
	Seed int64
	// Jobs is the number of worker clusters running scenarios at once.
	Jobs int
	// ShardIndex (1-based) and ShardCount split the N scenarios across CI jobs: scenario i runs in shard
	// i mod ShardCount + 1.
	ShardIndex, ShardCount int
	// Checks and Skip select checks; Skipped are checks the project skips with a reason.
	Checks, Skip []string
	Skipped      map[string]string
	// Scenarios, when set, are judged instead of generated ones (--last-failed).
	Scenarios []*simulate.Scenario
	// FailuresDir is where shrunk failures are written (default .astrabox/failures under the project).
	FailuresDir string
	// ShrinkBudget bounds the runs spent shrinking one failure (default 60).
	ShrinkBudget int
	// Replays is how many times a shrunk failure is replayed to tell flaky from failing (default 2).
	Replays int
	// Progress, when set, receives a one-line progress display (a terminal).
	Progress io.Writer
	// Project is the provider project directory, for replay commands.
	Project string
	// CorpusDir is where the seeds of guided exploration are kept between runs (default .astrabox/corpus
	// under the project); Fresh neither reads nor writes it.
	CorpusDir string
	Fresh     bool
	// Log receives notes (a corpus seed that no longer loads, an exploration left blind).
	Log io.Writer
	// Blind explores without guidance even when coverage is measured (benchmarks compare the two).
	Blind bool
	// Longer gives blind exploration's scenarios the lengths of guided generation's fresh ones (benchmarks
	// compare the two at equal length); guided exploration ignores it.
	Longer bool
	// LinesOnly guides by the provider's lines and branches alone, not also by the orders in which callbacks
	// ran (benchmarks compare the two).
	LinesOnly bool
	// StopAfterFailure judges no scenario after the first that failed (in index order; benchmarks count the
	// scenarios to the first failure). Every scenario before it is still judged.
	StopAfterFailure bool
}

// Failure is one check that a generated scenario broke.
type Failure struct {
	Check    string   `json:"check"`
	Message  string   `json:"message"`
	Index    int      `json:"index"`
	Seed     int64    `json:"seed"`
	Steps    int      `json:"original_steps"`
	Shrunk   []string `json:"shrunk_steps"`
	File     string   `json:"file"`
	Command  string   `json:"replay"`
	Flaky    bool     `json:"flaky"`
	Differed string   `json:"differed,omitempty"`
	// SaveError says why the shrunk scenario could not be saved (File is then empty).
	SaveError string `json:"save_error,omitempty"`
	// Scenario is the shrunk scenario.
	Scenario *simulate.Scenario `json:"-"`
}

// Result is the outcome of an exploration.
type Result struct {
	Seed      int64         `json:"seed"`
	Scenarios int           `json:"scenarios"`
	Callbacks int64         `json:"callbacks"`
	Elapsed   time.Duration `json:"elapsed_ns"`
	Failures  []Failure     `json:"failures"`
	// Errors are scenarios the kit itself could not run.
	Errors []string `json:"errors,omitempty"`
	// Guided is true when coverage steered the exploration: Replayed scenarios replayed the saved corpus,
	// Mutated were varied from seeds, Seeds is the corpus at the end (Favoured of them represent a feature), and Reached the lines and branch
	// directions (by callback) the explored scenarios reached.
	Guided   bool `json:"guided"`
	Replayed int  `json:"replayed_seeds,omitempty"`
	Mutated  int  `json:"mutated,omitempty"`
	Seeds    int  `json:"seeds,omitempty"`
	// Favoured counts the seeds that are the shortest to reach some feature (the ones varied by rarity).
	Favoured int `json:"favoured,omitempty"`
	// Orders counts the orders of two callbacks the explored scenarios showed (guided runs).
	Orders int `json:"orders,omitempty"`
	// States counts the platform states the explored scenarios' callbacks ran in (guided runs; stateFeatures).
	States int `json:"states,omitempty"`
	// Unreached are the callbacks the provider implements that no explored scenario called (guided runs).
	Unreached []simulate.Callback `json:"unreached_callbacks,omitempty"`
	Reached   int                 `json:"reached,omitempty"`
	// FirstFailure is how many scenarios were judged up to and including the first that failed a check
	// (in index order; 0 when none failed).
	FirstFailure int `json:"first_failure,omitempty"`
	// Coverage is what the explored scenarios reached of the provider's code (guided runs).
	Coverage *coverage.Profile `json:"-"`
	// Warnings are what the kit could not do without changing the verdict, such as saving a failure in a
	// read-only project; the command line prints them after the report.
	Warnings []string `json:"warnings,omitempty"`
}

// found is a judged scenario that failed checks.
type found struct {
	index int
	sc    *simulate.Scenario
	ids   []string
	msgs  map[string]string
}

// Judge runs a scenario and returns the checks it fails, their messages, and the history as JSON.
type Judge func(ctx context.Context, sc *simulate.Scenario) (ids []string, msgs map[string]string, history []byte, err error)

// judge runs a scenario and returns the checks it fails with their messages, and its history.
func judge(ctx context.Context, env *conformance.Env, w *conformance.Workers, sc *simulate.Scenario, o Options) ([]string, map[string]string, *simulate.History, error) {
	h, err := w.Run(ctx, clone(sc))
	if err != nil {
		return nil, nil, nil, err
	}
	ev := env.Evidence([]*simulate.History{h})
	ids, msgs := conformance.Failing(ev, o.Checks, o.Skip, o.Skipped)
	return ids, msgs, h, nil
}

// fewestGeneratedReplicas is the fewest replicas a generated or varied scenario has (generate draws two or
// three, changeReplicas moves between them): the size of the stages exploration prepares.
const fewestGeneratedReplicas = 2

// Explore generates (or takes) scenarios, judges each, and shrinks, saves and replays every failure. Memory
// stays flat: only failures are kept.
func Explore(ctx context.Context, env *conformance.Env, w *conformance.Workers, o Options) (*Result, error) {
	if o.ShrinkBudget <= 0 {
		o.ShrinkBudget = 60
	}
	if o.Replays <= 0 {
		o.Replays = 2
	}
	if o.ShardCount <= 0 {
		o.ShardIndex, o.ShardCount = 1, 1
	}
	if o.ShardIndex < 1 || o.ShardIndex > o.ShardCount {
		return nil, fmt.Errorf("shard %d/%d: the index must be between 1 and %d", o.ShardIndex, o.ShardCount, o.ShardCount)
	}
	if o.FailuresDir == "" {
		o.FailuresDir = filepath.Join(env.Target.Project.Dir, ".astrabox", "failures")
	}
	// A slot forks its next scenario's replicas ahead; forking a third that a two-replica scenario never uses
	// was a sixth of exploration's CPU (docs/performance.md). A three-replica scenario forks its third itself.
	w.StageReplicas(fewestGeneratedReplicas)
	indexes := o.indexes()
	res := &Result{Seed: o.Seed, Scenarios: len(indexes)}
	g, err := o.guide(env)
	if err != nil {
		return nil, err
	}
	w.StandBy()
	start := time.Now()
	jobs := max(o.Jobs, 1)
	t := &tally{progress: newProgress(o.Progress, len(indexes))}
	t.stopAt.Store(int64(len(indexes)))
	if g == nil {
		res.Reached = blind(ctx, env, w, o, indexes, jobs, t)
	} else {
		res.Guided = true
		guided(ctx, env, w, o, g, indexes, jobs, t)
		res.Replayed, res.Mutated, res.Seeds, res.Reached = g.replayed(indexes), g.mutated, len(g.seeds), g.covered
		res.Orders, res.States = len(g.hits)-g.covered-g.states, g.states
		res.Unreached = g.aim.unreached()
		res.Favoured = g.favoured()
		res.Coverage = g.cov.Profile()
	}
	t.progress.finish()
	res.Errors = t.errs
	res.Callbacks = t.calls.Load()
	if err := ctx.Err(); err != nil {
		return res, err
	}
	if g != nil && !o.Fresh {
		if err := saveCorpus(o.CorpusDir, g.saved(len(indexes))); err != nil {
			res.Warnings = append(res.Warnings, fmt.Sprintf("%v; the next run starts without this run's seeds (pass --explore-fresh, or make the directory writable)", err))
		}
	}
	if err := settleAll(ctx, env, w, o, res, t.failing, indexes); err != nil {
		return res, err
	}
	res.Elapsed = time.Since(start)
	for _, f := range res.Failures {
		if f.File == "" {
			res.Warnings = append(res.Warnings, fmt.Sprintf("the shrunk scenario of %s could not be saved in %s (%s); pass --failures-dir with a writable directory to keep it", f.Check, o.FailuresDir, f.SaveError))
		}
	}
	if err := saveLastFailed(o.FailuresDir, res.Failures); err != nil {
		res.Warnings = append(res.Warnings, fmt.Sprintf("%v; --last-failed will not find this run's failures (pass --failures-dir with a writable directory)", err))
	}
	return res, nil
}

// indexes are the scenario numbers this shard judges (every given scenario's, with o.Scenarios).
func (o *Options) indexes() []int {
	var out []int
	if len(o.Scenarios) > 0 {
		for i := range o.Scenarios {
			out = append(out, i)
		}
		return out
	}
	for i := 0; i < o.N; i++ {
		if i%o.ShardCount == o.ShardIndex-1 {
			out = append(out, i)
		}
	}
	return out
}

// settleAll shrinks, replays and saves one failure per check, from the lowest scenario index, so that the
// outcome is deterministic; it also records how far the first failure came.
func settleAll(ctx context.Context, env *conformance.Env, w *conformance.Workers, o Options, res *Result, failing []found, indexes []int) error {
	sort.Slice(failing, func(i, j int) bool { return failing[i].index < failing[j].index })
	if len(failing) > 0 {
		for k, idx := range indexes {
			if idx == failing[0].index {
				res.FirstFailure = k + 1
			}
		}
	}
	seen := map[string]bool{}
	for _, f := range failing {
		for _, id := range f.ids {
			if seen[id] {
				continue
			}
			seen[id] = true
			fl, err := settle(ctx, envJudge(env, w, o), f.sc, f.index, id, f.msgs[id], o, env.Target.Project.Dir)
			if err != nil {
				return err
			}
			res.Failures = append(res.Failures, *fl)
		}
	}
	sort.Slice(res.Failures, func(i, j int) bool { return res.Failures[i].Check < res.Failures[j].Check })
	return nil
}

// envJudge judges scenarios on the run's warm workers.
func envJudge(env *conformance.Env, w *conformance.Workers, o Options) Judge {
	return func(ctx context.Context, sc *simulate.Scenario) ([]string, map[string]string, []byte, error) {
		ids, msgs, h, err := judge(ctx, env, w, sc, o)
		if err != nil {
			return nil, nil, nil, err
		}
		raw, _ := json.Marshal(h)
		return ids, msgs, raw, nil
	}
}

// settle shrinks one failure, replays the shrunk scenario to tell flaky from failing, and saves it.
func settle(ctx context.Context, j Judge, sc *simulate.Scenario, index int, check, msg string, o Options, project string) (*Failure, error) {
	if o.Replays <= 0 {
		o.Replays = 2
	}
	fl := &Failure{Check: check, Message: msg, Index: index, Seed: sc.Seed, Steps: len(sc.Steps)}
	stillFails := func(ctx context.Context, cand *simulate.Scenario) (bool, error) {
		ids, _, _, err := j(ctx, cand)
		if err != nil {
			return false, nil
		}
		return contains(ids, check), nil
	}
	// Replay the original first: if it does not fail again, the failure is flaky before any shrinking.
	again, err := stillFails(ctx, sc)
	if err != nil {
		return nil, err
	}
	shrunk := sc
	if again {
		if shrunk, _, err = Shrink(ctx, sc, stillFails, o.ShrinkBudget); err != nil {
			return nil, err
		}
	} else {
		fl.Flaky = true
		fl.Differed = "the same scenario did not fail " + check + " when replayed"
	}
	// Replays of the shrunk scenario must fail the same way and give the same history.
	var first []byte
	for i := 0; i < o.Replays && !fl.Flaky; i++ {
		ids, _, raw, err := j(ctx, shrunk)
		if err != nil {
			return nil, err
		}
		if !contains(ids, check) {
			fl.Flaky = true
			fl.Differed = fmt.Sprintf("replay %d of the shrunk scenario did not fail %s", i+1, check)
			break
		}
		if first == nil {
			first = raw
		} else if !bytes.Equal(first, raw) {
			fl.Differed = "replays failed the same way but their histories differed: " + firstDifference(first, raw)
		}
	}
	shrunk.Name = fmt.Sprintf("%s-%s", strings.ToLower(check), shrunkName(sc))
	fl.Scenario = shrunk
	fl.Shrunk = shrunk.StepLines()
	file, err := save(o.FailuresDir, project, check, shrunk, fl)
	if err != nil {
		// The verdict stands without the file: report it, and warn that the scenario was not kept.
		fl.SaveError = err.Error()
		fl.Command = "not saved: " + fl.SaveError
		return fl, nil
	}
	fl.File = file
	fl.Command = fmt.Sprintf("astrabox simulate run %s --project %s", relOrAbs(file), relOrAbs(project))
	return fl, nil
}

func shrunkName(sc *simulate.Scenario) string {
	return strings.TrimPrefix(sc.Name, "explore-")
}

func firstDifference(a, b []byte) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	lo := max(0, i-60)
	return fmt.Sprintf("at byte %d: %q vs %q", i, a[lo:min(len(a), i+60)], b[lo:min(len(b), i+60)])
}

func relOrAbs(p string) string {
	wd, err := os.Getwd()
	if err != nil {
		return p
	}
	if rel, err := filepath.Rel(wd, p); err == nil && !strings.HasPrefix(rel, "..") {
		return rel
	}
	return p
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
