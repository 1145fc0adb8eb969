package conformance

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/astrabox-dev/astrabox/internal/discovery"
	"github.com/astrabox-dev/astrabox/internal/harness"
	"github.com/astrabox-dev/astrabox/internal/report"
	"github.com/astrabox-dev/astrabox/internal/secrets"
	"github.com/astrabox-dev/astrabox/internal/simulate"
)

// Workers run scenarios, at most a fixed number at a time. Every scenario gets fresh replica processes
// (forked from the run's fork servers, one per replica name), a fresh deployment double and fresh host
// directories, all gone when it ends: nothing of one scenario (state, threads, requests, files) reaches
// another, so a write that lands late is judged in the scenario and against the call that made it. To keep
// that cheap, each slot prepares its next scenario's double and processes as soon as its current scenario has
// ended (simulate.PrepareStage), while the caller judges it, unless no scenario is left to take it (RunAll
// knows how many are), and a finished scenario's processes are stopped in the background. With egress
// control (a provider's runs), RunAll instead opens each slot's first scenario ahead (PrepareFirst) and each
// later scenario while the ones before it run, its processes in the idle scheduling class (aheadPlan).
type Workers struct {
	// progress, when set, receives RunAll's progress line (Options.Progress, for the default suite).
	progress io.Writer
	// trace is the run's developer timeline (TraceEnv), nil when off.
	trace *tracer

	env      *Env
	ctx      context.Context
	slots    chan *slot
	all      []*slot
	replicas int
	// stageSize, when set (StageReplicas), is how many replicas a stage prepared from then on holds.
	stageSize int
	hosts     *simulate.Hosts
	own       bool // the workers made hosts and so close them
	closing   sync.WaitGroup

	mu sync.Mutex
	// unstarted counts the scenarios RunAll was given that have not taken a slot yet (-1: unknown, as for
	// exploration's own calls to Run); staged counts the slots holding a stage no scenario took yet. A slot
	// prepares a stage for its next scenario only while unstarted scenarios outnumber the stages waiting, so
	// that the default suite forks no replica set that no scenario will take.
	unstarted, staged int
	// hang is the hang latch of the RunAll in progress (nil outside RunAll: exploration plays, shrinks and
	// replays scenarios on its own terms, so a hang there never stops the others).
	hang *simulate.HangLatch
}

// slot is one scenario at a time, with the stage its next scenario takes and its own stand-ins of the
// declared services (nil without services).
type slot struct {
	next     *simulate.Stage
	services *simulate.Services
	hosts    *simulate.Hosts // the workers' hosts, or this slot's view of them with fork servers of its own
	// first is the platform of the scenario RunAll will play first on this slot, opened ahead (Prepare);
	// nil once played, or when none was prepared.
	first *simulate.Prepared
}

// NewWorkers prepares to run n scenarios at a time with up to `replicas` replicas each: it gives each slot
// its own stand-ins of the declared services (one instance of each per slot, see simulate.Services.Slots),
// starts the fork servers of those replicas (unless the environment's target already has them) and prepares
// each slot's first stage.
func (e *Env) NewWorkers(ctx context.Context, n, replicas int) (*Workers, error) {
	if n < 1 {
		n = 1
	}
	svcs, err := e.Sim.Services.Slots(ctx, n)
	if err != nil {
		return nil, undecided(fmt.Errorf("start the declared services for %d scenario slots (one instance of each service per slot; --jobs 1 runs one): %w", n, err))
	}
	w := &Workers{env: e, ctx: ctx, slots: make(chan *slot, n), replicas: max(1, replicas), hosts: e.Sim.Hosts, unstarted: -1}
	if w.hosts == nil {
		w.hosts = simulate.NewHosts(ctx, e.Sim.Python, e.Sim.ProjectDir, e.Seed, nil)
		w.own = true
	}
	w.hosts.Prestart(replicaNames(w.replicas)...)
	for i := 0; i < n; i++ {
		w.all = append(w.all, &slot{services: svcs[i], hosts: w.hosts})
	}
	for _, s := range w.all {
		s.next = w.prepare(s, w.replicas)
		if s.next != nil {
			w.staged++
		}
		w.slots <- s
	}
	return w, nil
}

// took counts a scenario that took slot s (and its stage, if it had one).
func (w *Workers) took(s *slot) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if s.next != nil {
		w.staged--
	}
	if w.unstarted > 0 {
		w.unstarted--
	}
}

// stageWanted tells whether a slot whose scenario ended should prepare a stage: some scenario may still come
// that no waiting stage serves. It counts the stage it allows.
func (w *Workers) stageWanted() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.unstarted >= 0 && w.unstarted <= w.staged {
		return false
	}
	w.staged++
	return true
}

// prepare starts preparing a stage of n replicas, or returns nil when scenarios start their own (a provider
// with declared services: their egress proxies belong to each scenario).
func (w *Workers) prepare(s *slot, n int) *simulate.Stage {
	if w.env.Sim.Services != nil {
		return nil
	}
	return simulate.PrepareStage(w.ctx, w.options(s), n)
}

func (w *Workers) options(s *slot) simulate.Options {
	o := w.env.Sim
	w.mu.Lock()
	o.Hosts = s.hosts
	o.Hang = w.hang
	w.mu.Unlock()
	return o
}

// ForkServersPerSlot gives every slot but the first fork servers of its own (simulate.Hosts.Slot), started
// now in the background, for the stages and scenarios it prepares from then on; a stage a slot prepared
// already keeps its processes. Each slot's server of a replica has that replica's string-hash seed, so
// verdicts do not change; what changes is that the slots no longer queue behind each other's fork requests,
// at the price of one more fork server per replica name and slot (an interpreter start each, and its memory
// for the whole run): worth it for runs of many scenarios (exploration), not for the default suite's few.
func (w *Workers) ForkServersPerSlot() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for i, s := range w.all {
		if i > 0 && s.hosts == w.hosts {
			s.hosts = w.hosts.Slot(i)
			s.hosts.Prestart(replicaNames(w.replicas)...)
		}
	}
}

// replicaNames are the names of the first n replicas: r1, r2, ...
func replicaNames(n int) []string {
	out := make([]string, 0, n)
	for i := 1; i <= n; i++ {
		out = append(out, simulate.ReplicaName(i))
	}
	return out
}

// Run plays one scenario on fresh replicas once a slot is free.
func (w *Workers) Run(ctx context.Context, sc *simulate.Scenario) (*simulate.History, error) {
	var s *slot
	select {
	case s = <-w.slots:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { w.slots <- s }()
	return w.runOn(ctx, s, sc)
}

// runOn plays one scenario on slot s, which the caller holds: on the platform prepared for it on that slot
// (PrepareFirst), else on the slot's stage, else on processes it starts itself.
func (w *Workers) runOn(ctx context.Context, s *slot, sc *simulate.Scenario) (*simulate.History, error) {
	return w.runPrepared(ctx, s, sc, nil)
}

// runPrepared is runOn, given the platform opened ahead for sc (RunAll's aheadPlan), if any, for a slot that
// has no first platform of its own left.
func (w *Workers) runPrepared(ctx context.Context, s *slot, sc *simulate.Scenario, ahead *simulate.Prepared) (*simulate.History, error) {
	w.took(s)
	o := w.options(s)
	o.Stage, o.Closing = s.next, &w.closing
	o.Services = s.services // this slot's stand-ins: a scenario at once on another slot never shares them
	o.Prepared, s.first = s.first, nil
	if o.Prepared == nil {
		o.Prepared = ahead
	} else {
		ahead.Close()
	}
	w.trace.mark("scenario %s: start (staged %t, prepared %t)", sc.Name, s.next != nil, o.Prepared.For(sc))
	h, err := simulate.Run(ctx, sc, o)
	w.trace.mark("scenario %s: end", sc.Name)
	// The next scenario's stage is prepared once this one has ended, never while it runs: preparing forks
	// processes, and CPU taken from a running scenario would shift its timing. None is prepared when no
	// scenario is left to take it (a slot without a stage starts its scenario's processes itself).
	s.next = nil
	if w.stageWanted() {
		if s.next = w.prepare(s, w.nextStageSize(sc)); s.next == nil {
			w.mu.Lock()
			w.staged--
			w.mu.Unlock()
		}
	}
	return h, err
}

// PrepareFirst opens ahead, in the background, the platform of each of the first scenarios RunAll will be
// given, one per slot (scenario k on slot k, as RunAll hands them out): its double, its replicas' egress
// proxies and its fresh replica processes with the provider loaded, with the scenario's own seed and the
// slot's own stand-ins (simulate.Prepare). Nothing else runs on the workers then, so no scenario's timing
// shifts; Open calls it before it has inspected the provider, so the replicas load beside inspection. A
// slot's stage, if it held one, is closed: the prepared platform replaces it.
func (w *Workers) PrepareFirst(scenarios []*simulate.Scenario) {
	for k, s := range w.all {
		if k >= len(scenarios) {
			break
		}
		if s.first != nil {
			s.first.Close()
		}
		if s.next != nil {
			s.next.Close()
			s.next = nil
			w.mu.Lock()
			w.staged--
			w.mu.Unlock()
		}
		o := w.options(s)
		o.Services = s.services
		s.first = simulate.Prepare(w.ctx, scenarios[k], o)
		if w.trace != nil {
			go func(pr *simulate.Prepared, name string) {
				<-pr.Ready()
				w.trace.mark("scenario %s: prepared", name)
			}(s.first, scenarios[k].Name)
		}
	}
}

// StageReplicas sizes the stages prepared from now on at n replicas (at least one). A scenario that needs
// more starts the rest itself when it begins, before its first step (simulate.Stage): exploration sizes its
// stages for the fewest replicas its generated scenarios have, so that no replica is forked ahead for a
// scenario that does not use it.
func (w *Workers) StageReplicas(n int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stageSize = max(1, n)
}

// nextStageSize is the size of the stage a slot prepares once its scenario sc ended: StageReplicas's, or
// else the most replicas the workers were made for or the last scenario had.
func (w *Workers) nextStageSize(sc *simulate.Scenario) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stageSize > 0 {
		return w.stageSize
	}
	return max(w.replicas, sc.Replicas)
}

// StandBy is kept for callers that ask for standby processes before exploring: every slot already prepares
// its next scenario's processes.
func (w *Workers) StandBy() {}

// Close stops every prepared stage and every finished scenario's processes, and the fork servers the workers
// started.
func (w *Workers) Close() {
	for _, s := range w.all {
		if s.next != nil {
			s.next.Close()
		}
		s.first.Close()
	}
	w.closing.Wait()
	if w.own {
		w.hosts.Close()
	}
}

// RunAll plays scenarios on the workers, at most len(clusters) at a time, and returns their histories in
// order.
func (w *Workers) RunAll(ctx context.Context, scenarios []*simulate.Scenario) ([]*simulate.History, error) {
	w.mu.Lock()
	w.unstarted = max(w.unstarted, 0) + len(scenarios)
	// Once a callback has hung, the other scenarios stop at their next step boundary: each would otherwise
	// wait out a full deadline and grace again for the same finding (the run ends within about one hang).
	w.hang = simulate.NewHangLatch()
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		w.unstarted = -1 // later calls to Run are not counted
		w.hang = nil
		w.mu.Unlock()
	}()
	hists := make([]*simulate.History, len(scenarios))
	errs := make([]error, len(scenarios))
	var shown sync.Mutex
	done, started := 0, time.Now()
	show := func(name string) {
		if w.progress == nil {
			return
		}
		shown.Lock()
		defer shown.Unlock()
		done++
		fmt.Fprintf(w.progress, "\r\x1b[Kran %d/%d scenarios · %s · last: %s", done, len(scenarios), time.Since(started).Round(100*time.Millisecond), name)
	}
	// RunAll holds every slot while it runs and plays worker k's scenarios on slot k, so that the first
	// scenario of slot k is scenario k, whose platform PrepareFirst may have opened there.
	held := make([]*slot, 0, len(w.all))
	for range w.all {
		select {
		case s := <-w.slots:
			held = append(held, s)
		case <-ctx.Done():
			for _, s := range held {
				w.slots <- s
			}
			return nil, undecided(fmt.Errorf("the run was interrupted before its scenarios finished (%w); every replica process was stopped", ctx.Err()))
		}
	}
	slices.SortFunc(held, func(a, b *slot) int { return slices.Index(w.all, a) - slices.Index(w.all, b) })
	ahead := w.aheadPlan(scenarios, len(held))
	defer ahead.close()
	inOrder(len(held), len(scenarios), func(k, i int) {
		hists[i], errs[i] = w.runPrepared(ctx, held[k], scenarios[i], ahead.take(i))
		show(scenarios[i].Name)
	})
	for _, s := range held {
		w.slots <- s
	}
	if w.progress != nil {
		fmt.Fprint(w.progress, "\r\x1b[K")
	}
	if err := ctx.Err(); err != nil {
		return nil, undecided(fmt.Errorf("the run was interrupted before its scenarios finished (%w); every replica process was stopped", err))
	}
	for i, err := range errs {
		if err != nil {
			if errors.Is(err, simulate.ErrProviderLoad) {
				return nil, undecided(fmt.Errorf("scenario %s: %w", scenarios[i].Name, err))
			}
			return nil, undecided(fmt.Errorf("scenario %s could not run: %w", scenarios[i].Name, err))
		}
	}
	return hists, nil
}

// Collect runs the scenarios (the default suite when o.Scenarios is empty) and gathers the evidence checks
// decide over.
func Collect(ctx context.Context, t *Target, info *harness.LoadInfo, seed int64, o Options) (*Evidence, error) {
	if t.Services == nil && info != nil && info.IsSubclass && info.Instantiated {
		// As in Run: the declared services' stand-ins for the run, and egress control.
		svcs, err := simulate.StartServices(ctx, t.Settings.Services, t.Settings.Egress)
		if err != nil {
			return nil, undecided(fmt.Errorf("start the declared services: %w", err))
		}
		t.Services = svcs
		defer func() { svcs.Close(); t.Services = nil }()
	}
	env, err := NewEnv(t, info, seed)
	if err != nil {
		return nil, err
	}
	env.Sim.Coverage = coverageOptions(t.Settings, o, t.Python.Version)
	if !env.Runnable() {
		return env.Evidence(nil), nil
	}
	scenarios, err := env.suite(o)
	if err != nil {
		return nil, err
	}
	w, err := env.NewWorkers(ctx, o.suiteJobs(len(scenarios), len(t.Settings.Services)), maxReplicas(scenarios, 1))
	if err != nil {
		return nil, err
	}
	defer w.Close()
	hists, err := w.RunAll(ctx, scenarios)
	if err != nil {
		return nil, err
	}
	// As in Run: a fake that died mid-run answered later requests with 502s, so nothing after it is evidence.
	if err := t.Services.Alive(); err != nil {
		return nil, undecided(err)
	}
	return env.Evidence(hists), nil
}

func applyDeadlines(d *simulate.Deadlines, over simulate.Deadlines) {
	set := func(dst *float64, v float64) {
		if v > 0 {
			*dst = v
		}
	}
	set(&d.Plan, over.Plan)
	set(&d.Synchronize, over.Synchronize)
	set(&d.Recover, over.Recover)
	set(&d.Session, over.Session)
	set(&d.Turn, over.Turn)
	set(&d.UserAction, over.UserAction)
}

func staticFacts(t *Target) StaticFacts {
	return StaticFacts{Pyproject: t.Project.Pyproject, NearMissGroups: nearMissGroups(t.Project)}
}

// nearMissGroups are discovery's typed facts about entry-point groups that look like a misspelt provider
// group.
func nearMissGroups(p *discovery.Project) []discovery.NearMiss { return p.NearMisses }

// NearMissError means the project declares no provider in the platform's group but does in a group that looks
// like a misspelling of it: the platform would silently run without the provider (EP-GROUP).
type NearMissError struct {
	Project *discovery.Project
	Python  *discovery.Interpreter
	Err     error
}

func (e *NearMissError) Error() string { return e.Err.Error() }

// Unwrap returns the discovery error.
func (e *NearMissError) Unwrap() error { return e.Err }

// nearMissReport is the report for a provider declared only in a near-miss group: EP-GROUP fails, with the
// declaration's place, and every other check is skipped. It is judged like any run, over evidence that holds
// only discovery's facts.
func nearMissReport(e *NearMissError, o Options) *report.Report {
	rep := &report.Report{Schema: report.Schema, Tool: report.Tool{Name: "astrabox", Version: o.Version}}
	rep.Provider = report.Provider{Project: e.Project.Dir, Source: e.Project.Pyproject}
	if e.Python != nil {
		rep.Provider.Python, rep.Provider.PythonPath = e.Python.VersionString(), e.Python.Path
	}
	const nothing = "no provider is declared in the group astrabox.providers.runtime_preparation, so nothing could run"
	ev := &Evidence{Project: e.Project.Dir, Secrets: &secrets.Set{}, Skipped: map[string]string{"*": nothing},
		Static: StaticFacts{Pyproject: e.Project.Pyproject, NearMissGroups: nearMissGroups(e.Project)}}
	for _, c := range Checks() {
		if c.Static && c.ID != "EP-GROUP" {
			ev.Skipped[c.ID] = nothing // nothing was loaded
		}
	}
	if o.recordEvidence != nil {
		o.recordEvidence(ev, nil)
	}
	rep.Results = nearMissResults(ev, o)
	rep.Summarize()
	return rep
}

// nearMissResults judges the evidence of a project that declared no provider in the group.
func nearMissResults(ev *Evidence, o Options) []report.Result {
	var out []report.Result
	for _, res := range (Verdicts{Checks: o.Checks, Skip: o.Skip}).Judge(ev) {
		if res.Check == "EP-GROUP" && res.Status == report.StatusFailed {
			res.Message += "; the platform would start without this provider"
		}
		out = append(out, res)
	}
	return out
}

// Decide runs the selected checks over the evidence and builds the report, with every secret of the
// evidence masked in every string of it (maskReport); an error only when the report holds a type the
// masking walker does not know.
func Decide(ev *Evidence, t *Target, seed int64, o Options) (*report.Report, error) {
	if o.recordEvidence != nil {
		o.recordEvidence(ev, t)
	}
	rep := &report.Report{Schema: report.Schema, Seed: seed}
	rep.Provider = report.Provider{
		EntryPoint: t.Resolution.Chosen.Name + " = " + t.Resolution.Chosen.Value, Target: t.Resolution.Chosen.Value, Source: t.Resolution.Chosen.Where(),
		Project: t.Project.Dir, Python: t.Python.VersionString(), PythonPath: t.Python.Path,
	}
	if ev.Load != nil && ev.Load.Name != nil {
		rep.Provider.Name = *ev.Load.Name
	}
	for _, h := range ev.Histories {
		rep.Scenarios = append(rep.Scenarios, h.Scenario)
		for _, c := range h.CallsOf(simulate.CallPlan) {
			if c.Result != nil && c.Result.SessionBound {
				rep.Provider.SessionBound = true
			}
		}
	}
	v := Verdicts{Checks: o.Checks, Skip: o.Skip, Skipped: t.Settings.Skip, SkipFile: t.Settings.File}
	rep.Results = v.Judge(ev)
	rep.Coverage = coverageProfile(ev, rep.Results)
	rep.Summarize()
	return maskReport(rep, ev.Secrets)
}

func selected(c *Check, o Options) bool {
	if len(o.Checks) > 0 {
		ok := false
		for _, p := range o.Checks {
			if Match(p, c) {
				ok = true
			}
		}
		if !ok {
			return false
		}
	}
	for _, p := range o.Skip {
		if Match(p, c) {
			return false
		}
	}
	return true
}

func relLocation(l *report.Location, project string) *report.Location {
	if l == nil || l.Path == "" {
		return nil
	}
	out := *l
	if rel, err := filepath.Rel(project, l.Path); err == nil && !strings.HasPrefix(rel, "..") {
		out.Path = filepath.ToSlash(rel)
	}
	return &out
}

// Selected tells whether a check is selected by --check and --skip patterns.
func Selected(c *Check, checks, skip []string) bool {
	return selected(c, Options{Checks: checks, Skip: skip})
}

// Failing decides the selected checks over the evidence with the one judge of a run and returns the IDs of
// those that failed (warnings, not-applicable and not-exercised results excluded), in table order, with their
// first message, masked.
func Failing(ev *Evidence, checks, skip []string, skipped map[string]string) (ids []string, messages map[string]string) {
	messages = map[string]string{}
	for _, r := range (Verdicts{Checks: checks, Skip: skip, Skipped: skipped}).Judge(ev) {
		if r.Status == report.StatusFailed {
			ids = append(ids, r.Check)
			messages[r.Check] = ev.Secrets.Mask(r.Message) // a string, not a report: Mask is the walk
		}
	}
	return ids, messages
}

// inOrder runs run(k, 0) to run(k, count-1), at most n at a time, starting them in index order: each of n
// goroutines (k is its number) takes the next index once its last run returned, goroutine k taking index k
// first. RunAll plays the suite's scenarios this way
// so that which scenarios share a slot does not depend on which goroutine the scheduler woke first: the
// default suite's order puts its longest scenario (recovery) in the first wave, and the others after it
// fill the other slot.
func inOrder(n, count int, run func(k, i int)) {
	next := make(chan int)
	var wg sync.WaitGroup
	first := max(1, min(n, count))
	for k := 0; k < first; k++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if k < count {
				run(k, k)
			}
			for i := range next {
				run(k, i)
			}
		}()
	}
	for i := first; i < count; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
}

// aheadPlan opens the scenarios after RunAll's first wave ahead, one at a time, while the scenarios before
// them run: scenario i is opened (simulate.PrepareAhead: its replica processes load the provider in the idle
// scheduling class, so they take no CPU a running scenario wants) once scenario i-1 took a slot and its own
// platform is open (for the first of them, once every slot's first platform is open), and
// whichever slot frees first plays it, as inOrder hands indices out in order. The platform is the one its
// scenario would open itself (same seed, double, proxies and fresh processes), only earlier.
//
// It is nil (take gives nothing, and every later scenario opens its own platform when it begins, as before)
// when the system cannot move a process out of the idle class again (simulate.CanPrepareAhead), when the
// run has no egress control (its slots prepare stages instead), when a slot has fork servers of its own, or
// when the provider declares services: a platform opened ahead resets the stand-ins of its slot, which a
// running scenario may be using, while with none declared every slot's platform is the same.
func (w *Workers) aheadPlan(scenarios []*simulate.Scenario, slots int) *aheadPlan {
	sv := w.env.Sim.Services
	if len(scenarios) <= slots || sv == nil || len(sv.Specs) > 0 || !simulate.CanPrepareAhead() {
		return nil
	}
	for _, s := range w.all {
		if s.hosts != w.hosts {
			return nil
		}
	}
	a := &aheadPlan{w: w, scenarios: scenarios, services: w.all[0].services}
	var first []<-chan struct{}
	for _, s := range w.all {
		if s.first != nil {
			first = append(first, s.first.Ready())
		}
	}
	a.open(slots, first...)
	return a
}

// aheadPlan is the platform opened ahead for the next scenario RunAll will hand out.
type aheadPlan struct {
	w         *Workers
	scenarios []*simulate.Scenario
	services  *simulate.Services // no declared services: any slot's are the same

	mu   sync.Mutex
	next int                // the index of the scenario pr is for
	pr   *simulate.Prepared // nil once taken, or when none is left
}

// open starts opening scenario i ahead, if there is one, once the platforms still opening (after) are open:
// one open at a time, so that no scenario's own open waits behind one made ahead.
func (a *aheadPlan) open(i int, after ...<-chan struct{}) {
	if i >= len(a.scenarios) {
		a.next, a.pr = i, nil
		return
	}
	o := a.w.options(a.w.all[0])
	o.Hosts, o.Services = a.w.hosts, a.services
	a.next, a.pr = i, simulate.PrepareAhead(a.w.ctx, a.scenarios[i], o, after...)
	if a.w.trace != nil {
		go func(pr *simulate.Prepared, name string) {
			<-pr.Ready()
			a.w.trace.mark("scenario %s: prepared ahead", name)
		}(a.pr, a.scenarios[i].Name)
	}
}

// take returns the platform opened ahead for scenario i (nil when there is none) and starts opening the
// next one.
func (a *aheadPlan) take(i int) *simulate.Prepared {
	if a == nil {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if i != a.next {
		return nil // one of the first wave, played on its slot's first platform
	}
	pr := a.pr
	if pr != nil {
		a.open(i+1, pr.Ready())
	} else {
		a.open(i + 1)
	}
	return pr
}

// close stops a platform opened ahead that no scenario took (the run was interrupted).
func (a *aheadPlan) close() {
	if a == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.pr.Close()
	a.pr = nil
}
