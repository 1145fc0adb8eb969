package conformance

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/astrabox-dev/astrabox/internal/discovery"
	"github.com/astrabox-dev/astrabox/internal/egress"
	"github.com/astrabox-dev/astrabox/internal/harness"
	"github.com/astrabox-dev/astrabox/internal/report"
	"github.com/astrabox-dev/astrabox/internal/seconds"
	"github.com/astrabox-dev/astrabox/internal/secrets"
	"github.com/astrabox-dev/astrabox/internal/simulate"
	"github.com/astrabox-dev/astrabox/internal/wrapper"
)

//go:embed suite/*.yaml
var suiteFS embed.FS

// DefaultScenarios returns the scenarios of the default suite, in order.
func DefaultScenarios() ([]*simulate.Scenario, error) {
	entries, err := suiteFS.ReadDir("suite")
	if err != nil {
		return nil, fmt.Errorf("read embedded suite: %w", err)
	}
	var out []*simulate.Scenario
	for _, e := range entries {
		data, err := suiteFS.ReadFile(path.Join("suite", e.Name()))
		if err != nil {
			return nil, fmt.Errorf("read embedded suite: %w", err)
		}
		sc, err := simulate.ParseScenario("suite/"+e.Name(), data)
		if err != nil {
			return nil, fmt.Errorf("embedded suite: %w", err)
		}
		out = append(out, sc)
	}
	return out, nil
}

// UndecidedError means the kit could not decide (exit code 2): bad usage, an unreadable project, a provider
// that could not be loaded, conflicting providers.
type UndecidedError struct {
	Err error
}

func (e *UndecidedError) Error() string { return e.Err.Error() }

// Unwrap returns the cause.
func (e *UndecidedError) Unwrap() error { return e.Err }

// ExitCode is 2.
func (e *UndecidedError) ExitCode() int { return 2 }

func undecided(err error) error {
	var u *UndecidedError
	if errors.As(err, &u) {
		return err
	}
	return &UndecidedError{Err: err}
}

// Options configure a conformance run.
type Options struct {
	// Project is a directory inside the provider project ("" = the working directory).
	Project string
	// Python is the --python flag.
	Python string
	// Provider picks one provider when several are declared (--provider).
	Provider string
	// Seed overrides the seed (nil = settings, else 1).
	Seed *int64
	// Checks and Skip select checks by ID, glob or area.
	Checks, Skip []string
	// Scenarios replaces the default suite when non-empty.
	Scenarios []*simulate.Scenario
	// Jobs is how many scenarios run at once (0 = the default: for the suite two per core, or one per core
	// when the provider declares services; one per core for exploration; see suiteJobs).
	Jobs int
	// Getenv and LookPath are injectable for tests (nil = the process's own).
	Getenv   func(string) string
	LookPath func(string) (string, error)
	// Log receives status lines (which interpreter, which provider, warnings); Verbose adds more detail.
	Log     io.Writer
	Verbose bool
	// Version is the kit's version for the report.
	Version string
	// ConfigFile replaces the project's settings with this file's (--config); Set overrides single keys
	// (--set KEY=VALUE, VALUE in TOML).
	ConfigFile string
	Set        []string
	// Explore says the caller will explore after the suite on Live's Workers: Open then prepares as many
	// worker sets as Jobs allows, not only as many as the suite has scenarios. Without it, Suite stops the
	// run's processes (workers, declared services, fork servers) once the suite's scenarios have ended,
	// while it judges them: nothing may run on Workers after Suite.
	Explore bool
	// Coverage turns coverage of the provider's own code on or off (nil = the settings, else on).
	Coverage *bool
	// Progress, when set, receives a one-line display of the default suite's progress, rewritten in place
	// ("\r\x1b[K"): for a terminal only.
	Progress io.Writer

	// recordEvidence, when set (the recorded-evidence tests), receives the evidence Decide judges, with its
	// target (nil for a project that declared no provider in the group).
	recordEvidence func(ev *Evidence, t *Target)
	// trace is the run's developer timeline (TraceEnv), nil when off.
	trace *tracer
}

// Target is a resolved provider project: everything needed to load and simulate the provider.
type Target struct {
	Project    *discovery.Project
	Resolution discovery.Resolution
	Python     *discovery.Interpreter
	Settings   *Settings
	Paths      []string
	Warnings   []string
	// Zygote, when set, is a fork server for this target's interpreter and project that inspection forks
	// its process from. Whoever set it closes it.
	Zygote *harness.Zygote
	// Hosts, when set, are the hosts of the run's replicas (a fork server per replica name, with that
	// replica's string-hash seed); whoever set them closes them. Without them, Workers make their own.
	Hosts *simulate.Hosts
	// Services, when set, are the stand-ins of the project's declared services for the run; whoever set it
	// closes it.
	Services *simulate.Services
	// Wrapper is the check of the project's image wrapper (image-wrapper) made by the run, nil when none was
	// made; WrapperUnusable says why a named wrapper could not be run at all.
	Wrapper         *wrapper.Result
	WrapperUnusable string
}

// Resolve discovers the project, its provider declaration, its interpreter and its settings.
func Resolve(ctx context.Context, o Options) (*Target, error) {
	c, err := chooseInterpreter(o)
	if err != nil {
		return nil, err
	}
	return c.resolve(ctx, o)
}

// chosen is a project read, its settings parsed and its interpreter chosen: what a run's fork servers need,
// before the installed entry points are listed and the provider declaration is resolved (chosen.resolve).
type chosen struct {
	proj     *discovery.Project
	settings *Settings
	py       *discovery.Interpreter
}

// chooseInterpreter reads the project and its settings and chooses the interpreter (Resolve's first half).
func chooseInterpreter(o Options) (*chosen, error) {
	start := o.Project
	if start == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, undecided(fmt.Errorf("find the working directory: %w", err))
		}
		start = wd
	}
	abs, err := filepath.Abs(start)
	if err != nil {
		return nil, undecided(fmt.Errorf("resolve %s: %w", start, err))
	}
	if st, err := os.Stat(abs); err != nil {
		return nil, undecided(fmt.Errorf("project directory %s: %w; pass --project DIR pointing at the directory that holds pyproject.toml", start, err))
	} else if !st.IsDir() {
		abs = filepath.Dir(abs)
	}
	root := abs
	if o.Project == "" {
		if root, err = discovery.FindProjectRoot(abs); err != nil {
			return nil, undecided(err)
		}
	}
	proj, err := discovery.LoadProject(root)
	if err != nil {
		return nil, undecided(err)
	}
	// The settings come first: their python key takes part in choosing the interpreter.
	raw, file, dir, err := settingsSource(proj.Settings, proj.SettingsFile, proj.Dir, o.ConfigFile, o.Set)
	if err != nil {
		return nil, undecided(err)
	}
	settings, err := ParseSettings(raw, file, dir)
	if err != nil {
		return nil, undecided(err)
	}
	setting := ""
	if settings.Python != "" {
		setting = "python = " + strconv.Quote(settings.Python)
		if settings.File != "" {
			where := filepath.Base(settings.File)
			if settings.PythonLine > 0 {
				where += fmt.Sprintf(":%d", settings.PythonLine)
			}
			setting += " in " + where
		}
	}
	o.trace.mark("resolve: project and settings read")
	py, err := discovery.FindInterpreter(discovery.InterpreterOptions{Flag: o.Python, Setting: settings.Python, SettingReason: setting,
		Getenv: o.Getenv, ProjectDir: proj.Dir, LookPath: o.LookPath})
	if err != nil {
		return nil, undecided(err)
	}
	o.trace.mark("resolve: interpreter %s chosen (via %q)", py.Path, py.Via)
	return &chosen{proj: proj, settings: settings, py: py}, nil
}

// resolve lists the installed entry points on the chosen interpreter and resolves the provider declaration
// (Resolve's second half).
func (c *chosen) resolve(ctx context.Context, o Options) (*Target, error) {
	proj, settings, py := c.proj, c.settings, c.py
	installed, err := discovery.InstalledEntryPoints(ctx, py.Path, proj.Dir)
	if err != nil {
		return nil, undecided(err)
	}
	res, err := discovery.Resolve(proj, installed, o.Provider)
	if err != nil {
		var np *discovery.NoProviderError
		if errors.As(err, &np) && len(nearMissGroups(proj)) > 0 {
			return nil, &NearMissError{Project: proj, Python: py, Err: err}
		}
		return nil, undecided(err)
	}
	t := &Target{Project: proj, Resolution: res, Python: py, Settings: settings}
	t.Warnings = append(append(t.Warnings, proj.Warnings...), res.Warnings...)
	t.Warnings = append(t.Warnings, py.Warnings...)
	t.Paths = append(append([]string{}, proj.CodeRoots...), settings.PythonPath...)
	return t, nil
}

// limits turns the settings into process limits.
func (s *Settings) limits() harness.Limits {
	l := harness.DefaultLimits()
	if s.MemoryMB > 0 {
		l.MemoryRSS = uint64(s.MemoryMB) << 20
	}
	if s.AddressSpaceMB > 0 {
		l.AddressSpace = uint64(s.AddressSpaceMB) << 20
	}
	if s.OpenFiles > 0 {
		l.OpenFiles = uint64(s.OpenFiles)
	}
	return l
}

// Inspect loads the provider once and returns what the harness learnt about it.
func Inspect(ctx context.Context, t *Target) (*harness.LoadInfo, *harness.Reply, error) {
	proc, err := harness.Start(ctx, harness.Options{Python: t.Python.Path, ProjectDir: t.Project.Dir, Replica: "inspect", Limits: t.Settings.limits(), Zygote: t.Zygote})
	if err != nil {
		return nil, nil, undecided(fmt.Errorf("start the provider harness with %s: %w", t.Python.Path, err))
	}
	defer proc.Close()
	reply, err := proc.Load(ctx, harness.LoadArgs{Target: t.Resolution.Chosen.Ref.Target(), Paths: t.Paths, ProjectRoot: t.Project.Dir, ForceDebugLogging: t.Settings.ForceDebugLogging})
	if err != nil {
		return nil, nil, undecided(fmt.Errorf("load provider %s: %w", t.Resolution.Chosen.Value, err))
	}
	if !reply.OK {
		return nil, reply, nil
	}
	info, err := reply.LoadInfo()
	if err != nil {
		return nil, reply, undecided(fmt.Errorf("load provider %s: %w", t.Resolution.Chosen.Value, err))
	}
	return info, reply, nil
}

// LoadError formats a failed load for humans: the provider's exception and own frame, the interpreter and
// sys.path used, the code roots found, and what to do (discovery.LoadAdvice).
func LoadError(t *Target, reply *harness.Reply) error {
	msg := "the provider could not be loaded"
	errType := ""
	if reply != nil && reply.Error != nil {
		e := reply.Error
		errType = e.Type
		msg = fmt.Sprintf("loading %s raised %s: %s", t.Resolution.Chosen.Value, e.Type, e.Message)
		if n := len(e.Frames); n > 0 {
			f := e.Frames[n-1]
			msg += fmt.Sprintf("\n  at %s:%d in %s", f.File, f.Line, f.Function)
		}
	}
	var b strings.Builder
	b.WriteString(msg)
	fmt.Fprintf(&b, "\n  declared at %s", t.Resolution.Chosen.Where())
	for _, l := range discovery.LoadAdvice(discovery.LoadContext{Project: t.Project, Python: t.Python,
		Chosen: t.Resolution.Chosen, Paths: t.Paths, ErrorType: errType}) {
		b.WriteString("\n  " + l)
	}
	b.WriteString("\n  fix the import or the object reference, then run again")
	return undecided(&LoadFailure{Text: b.String(), ErrorType: errType, Python: t.Python})
}

// LoadFailure is a provider that did not load: the text for humans, the Python exception type, and the
// interpreter that tried (so that every report format can name it, why it was chosen and how to pin another).
type LoadFailure struct {
	Text      string
	ErrorType string
	Python    *discovery.Interpreter
}

func (e *LoadFailure) Error() string { return e.Text }

// MissingLibrary tells whether the load failed on an import (a library missing from the interpreter).
func (e *LoadFailure) MissingLibrary() bool {
	return e.ErrorType == discovery.PyModuleNotFoundError || e.ErrorType == discovery.PyImportError
}

// Run runs the conformance suite and returns the report: Open, Suite and Close, for a caller that neither
// explores nor suppresses. Errors are UndecidedError (exit code 2).
func Run(ctx context.Context, o Options) (*report.Report, error) {
	l, err := Open(ctx, o)
	if err != nil {
		return nil, err
	}
	defer l.Close()
	return l.Suite(ctx)
}

// Live is an opened run, after go-plugin's Client: its caller owns its lifetime. Open resolves the project,
// starts the fork servers, loads the provider, starts the declared services and warms the workers; the
// caller then runs the suite (Suite), explores with Env and Workers if it wants to, merges, suppresses and
// masks with the run's Secrets as it sees fit, each step returning a new value, and Closes it. Nothing runs inside Live
// on the caller's behalf.
type Live struct {
	// Env and Workers are the run's environment and warm worker sets: what exploration runs on. Both are
	// nil when the provider cannot run scenarios (Runnable).
	Env     *Env
	Workers *Workers

	o         Options
	seed      int64
	target    *Target
	scenarios []*simulate.Scenario
	nearMiss  *NearMissError
	logf      func(string, ...any)
	// secrets are what Mask and MaskError mask: the planted canaries, then (after Suite) the suite's
	// evidence set.
	secrets *secrets.Set
	closers []func()
	// stopping is closed once the closers Suite ran in the background have returned (nil when it ran none).
	stopping chan struct{}
}

// Open opens a run: everything up to the first scenario. Errors are UndecidedError (exit code 2); on an
// error whatever was started is closed again. A project that declared its provider only in a near-miss
// group opens too: its Suite is the report that says so.
func Open(ctx context.Context, o Options) (_ *Live, err error) {
	for _, p := range append(append([]string{}, o.Checks...), o.Skip...) {
		if err := ValidatePattern(p); err != nil {
			return nil, undecided(err)
		}
	}
	if o.trace == nil {
		o.trace = newTracer(o.Getenv)
	}
	o.trace.mark("open")
	l := &Live{o: o, secrets: &secrets.Set{}, logf: func(format string, args ...any) {
		if o.Log != nil {
			fmt.Fprintf(o.Log, format+"\n", args...)
		}
	}}
	defer func() {
		if err != nil {
			l.Close()
		}
	}()
	c, err := chooseInterpreter(o)
	if err != nil {
		return nil, err
	}
	l.seed = runSeed(c.settings, o)
	// One fork server per replica name for the whole run, each with that replica's string-hash seed:
	// inspection and every replica process of every scenario are forked from them (an interpreter start per
	// replica name instead of one per process). Without one, a process starts its own interpreter. They
	// need only the interpreter, the project and the seed, so they start before the installed entry points
	// are listed (an interpreter start of its own) and the two run side by side.
	var verbose io.Writer
	if o.Verbose {
		verbose = o.Log
	}
	hosts := simulate.NewHosts(ctx, c.py.Path, c.proj.Dir, l.seed, verbose)
	l.closers = append(l.closers, func() { hosts.Close(); o.trace.mark("close: fork servers stopped") })
	hosts.Prestart(replicaNames(max(3, c.settings.Replicas))...)
	if o.trace != nil {
		for _, name := range replicaNames(max(3, c.settings.Replicas)) {
			go func() {
				if hosts.ForkServer(name) != nil {
					o.trace.mark("fork server %s ready", name)
				}
			}()
		}
	}
	t, err := c.resolve(ctx, o)
	if err != nil {
		var nm *NearMissError
		if errors.As(err, &nm) {
			l.Close() // no scenario runs: the fork servers are not needed
			l.nearMiss = nm
			return l, nil
		}
		return nil, err
	}
	o.trace.mark("resolve: installed entry points listed, provider resolved")
	l.target = t
	logTarget(t, o, l.logf)
	t.Hosts = hosts
	t.Zygote = t.Hosts.ForkServer("r1")
	// Inspection loads the provider once, in a process of its own; meanwhile the run is made ready on the
	// assumption that the provider can run scenarios (it is the common case): the declared services'
	// stand-ins and egress control, the environment, the workers, and the platform of each slot's first
	// scenario, whose replicas load beside inspection instead of after it (Workers.PrepareFirst). When
	// inspection says otherwise, all of that is closed again and the run goes on as before.
	o.trace.mark("inspect: start")
	var (
		info      *harness.LoadInfo
		reply     *harness.Reply
		errInsp   error
		inspected = make(chan struct{})
	)
	go func() {
		defer close(inspected)
		info, reply, errInsp = Inspect(ctx, t)
		o.trace.mark("inspect: provider loaded")
	}()
	waited := false
	awaitInspection := func() {
		if !waited {
			<-inspected
			waited = true
		}
	}
	defer awaitInspection() // no inspection process outlives Open, whatever it returns
	var workersLive *Workers
	started := time.Now()
	env, err := l.prepareScenarios(ctx, t, &workersLive)
	awaitInspection()
	if errInsp != nil {
		return nil, errInsp
	}
	if info == nil {
		return nil, LoadError(t, reply)
	}
	runnable := info.IsSubclass && info.Instantiated
	if !runnable || err != nil {
		// Not runnable: nothing prepared is needed (and a failure to prepare did not matter). Otherwise the
		// preparation's error is the run's.
		if workersLive != nil {
			workersLive.Close()
		}
		if t.Services != nil {
			_ = t.Services.Close()
			t.Services = nil
		}
		if runnable {
			return nil, err
		}
		if env, err = NewEnv(t, info, l.seed); err != nil {
			return nil, err
		}
		env.Sim.Coverage = coverageOptions(t.Settings, o, t.Python.Version)
		l.Env, l.secrets = env, env.Secrets()
		if err := t.checkWrapper(ctx); err != nil {
			return nil, err
		}
		return l, nil
	}
	env.Info = info
	if err := t.checkWrapper(ctx); err != nil {
		return nil, err
	}
	l.Env, l.secrets, l.Workers = env, env.Secrets(), workersLive
	if o.Verbose {
		jobs := len(workersLive.all)
		l.logf("prepared %d scenario slot(s) in %s (fresh replicas per scenario%s)", jobs, time.Since(started).Round(time.Millisecond), slotServices(t.Settings, jobs))
	}
	return l, nil
}

// prepareScenarios starts, for a provider not yet known to be runnable, what its scenarios need: the
// declared services' stand-ins and egress control (a connection to an undeclared non-loopback destination
// is refused and recorded, docs/services.md, so a run never reaches a real system by accident), the
// environment (without the load info, which the caller sets), the suite, the workers, and the platform of
// each slot's first scenario. Whatever it started is closed by l.Close, and by the caller when the provider
// turns out not to be runnable; *w is set once the workers exist.
func (l *Live) prepareScenarios(ctx context.Context, t *Target, w **Workers) (*Env, error) {
	o := l.o
	svcs, err := simulate.StartServices(ctx, t.Settings.Services, t.Settings.Egress)
	if err != nil {
		return nil, undecided(fmt.Errorf("start the declared services: %w", err))
	}
	t.Services = svcs
	l.closers = append(l.closers, func() {
		if t.Services != nil {
			_ = t.Services.Close()
			o.trace.mark("close: services stopped")
		}
	})
	o.trace.mark("services started (%d declared)", len(t.Settings.Services))
	env, err := NewEnv(t, nil, l.seed)
	if err != nil {
		return nil, err
	}
	env.Sim.Coverage = coverageOptions(t.Settings, o, t.Python.Version)
	if l.scenarios, err = env.suite(o); err != nil {
		return nil, err
	}
	jobs := o.suiteJobs(len(l.scenarios), len(t.Settings.Services))
	if o.Explore {
		jobs = o.jobs(1 << 20)
	}
	o.trace.mark("workers: %d slot(s) for %d scenario(s)", jobs, len(l.scenarios))
	ws, err := env.NewWorkers(ctx, jobs, maxReplicas(l.scenarios, 3))
	if err != nil {
		return nil, maskError(env.Secrets(), err)
	}
	ws.trace = o.trace
	*w = ws
	l.closers = append(l.closers, func() { ws.Close(); o.trace.mark("close: workers stopped") })
	ws.PrepareFirst(l.scenarios)
	o.trace.mark("workers: ready (first scenarios preparing)")
	return env, nil
}

// Close stops everything Open started (workers, services, fork servers), last started first. It may be
// called more than once.
func (l *Live) Close() {
	if l.stopping != nil {
		<-l.stopping
	}
	closers := l.closers
	l.closers = nil
	l.runClosers(closers)
}

// runClosers runs closers, last added first.
func (l *Live) runClosers(closers []func()) {
	if len(closers) > 0 {
		l.o.trace.mark("close: start")
	}
	for i := len(closers) - 1; i >= 0; i-- {
		closers[i]()
	}
}

// stopInBackground starts closing the run (workers, services, fork servers) while the caller goes on (Suite
// judging); Close waits for it.
func (l *Live) stopInBackground() {
	closers := l.closers
	l.closers = nil
	done := make(chan struct{})
	l.stopping = done
	go func() {
		defer close(done)
		l.runClosers(closers)
	}()
}

// Runnable tells whether the provider can run scenarios: Env and Workers are set.
func (l *Live) Runnable() bool { return l.Workers != nil }

// Alive returns an UndecidedError when a declared service's stand-in died during the run: a fake that died
// mid-run answered later scenarios with 502s, so nothing judged after it can be trusted. A caller that ran
// scenarios of its own on Workers (exploration) asks before it trusts them.
func (l *Live) Alive() error {
	if l.target == nil {
		return nil
	}
	if err := l.target.Services.Alive(); err != nil {
		return undecided(l.MaskError(err))
	}
	return nil
}

// maskError masks a run's secrets in the text of an error it returns (a replica's error can carry a canary
// the provider stashed), keeping an UndecidedError on top so that the exit code stays what it was.
func maskError(s *secrets.Set, err error) error {
	if err == nil {
		return nil
	}
	var u *UndecidedError
	if errors.As(err, &u) && u == err {
		return &UndecidedError{Err: s.MaskError(u.Err)}
	}
	return s.MaskError(err)
}

// Secrets is the run's secret set, passed to whoever prints text of the run: the planted canaries, and
// after Suite every secret of the suite's evidence (what its histories planted, what the provider returned).
func (l *Live) Secrets() *secrets.Set { return l.secrets }

// MaskError masks the run's secrets in an error's text (see maskError).
func (l *Live) MaskError(err error) error { return maskError(l.secrets, err) }

// Suite plays the scenarios of the run (the default suite, or Options.Scenarios) and returns the report
// judged over them, masked; for a provider that cannot run scenarios, the report judged without any. The
// report is a new value every call; Live keeps no reference to it.
func (l *Live) Suite(ctx context.Context) (*report.Report, error) {
	if l.nearMiss != nil {
		return nearMissReport(l.nearMiss, l.o), nil
	}
	t, env := l.target, l.Env
	var hists []*simulate.History
	if l.Runnable() {
		started := time.Now()
		l.Workers.progress = l.o.Progress
		var err error
		hists, err = l.Workers.RunAll(ctx, l.scenarios)
		l.Workers.progress = nil
		if err != nil {
			return nil, l.MaskError(err)
		}
		l.o.trace.mark("scenarios: all ended")
		if err := l.Alive(); err != nil {
			return nil, err
		}
		if l.o.Verbose {
			l.logf("ran %d scenario(s) in %s", len(l.scenarios), time.Since(started).Round(time.Millisecond))
		}
		if w := stoppedByHang(hists); w != "" {
			l.logf("warning: %s", l.secrets.Mask(w))
		}
		for _, w := range childWaitWarnings(hists) {
			l.logf("warning: %s", l.secrets.Mask(w))
		}
		if !l.o.Explore {
			// Nothing runs on the workers after the suite (Options.Explore), so the run's processes are
			// stopped while the suite is judged instead of after it.
			l.stopInBackground()
		}
	}
	ev := env.Evidence(hists)
	l.o.trace.mark("judge: evidence gathered")
	rep, err := Decide(ev, t, l.seed, l.o)
	if err != nil {
		return nil, undecided(err)
	}
	l.o.trace.mark("judge: decided, masked")
	l.secrets = ev.Secrets
	rep.Tool = report.Tool{Name: "astrabox", Version: l.o.Version}
	if rep.Coverage == nil && env.Runnable() {
		rep.Coverage = coverageOff(t.Settings, l.o, t.Python.Version)
	}
	return rep, nil
}

// checkWrapper checks the project's image wrapper, when the settings name one, as `astrabox image
// check-wrapper` does (SESSION-CLI-PROBE). A wrapper that cannot be run is a finding, not an undecided run.
func (t *Target) checkWrapper(ctx context.Context) error {
	if t.Settings == nil || t.Settings.ImageWrapper == "" {
		return nil
	}
	res, err := wrapper.Check(ctx, wrapper.Options{Path: t.Settings.ImageWrapper, RealCLI: t.Settings.ImageWrapperRealCLI})
	var unusable *wrapper.UnusableError
	switch {
	case errors.As(err, &unusable):
		t.WrapperUnusable = unusable.Error()
	case err != nil:
		return undecided(fmt.Errorf("check the image wrapper %s: %w", t.Settings.ImageWrapper, err))
	default:
		t.Wrapper = res
	}
	return nil
}

// logTarget logs, under -v, the interpreter and provider chosen, and every warning of the target.
func logTarget(t *Target, o Options, logf func(string, ...any)) {
	if o.Verbose {
		via := ""
		if t.Python.Via != "" {
			via = ", behind the launcher " + t.Python.Via
		}
		logf("interpreter: %s (Python %s, chosen by %s%s)", t.Python.Path, t.Python.VersionString(), t.Python.Reason, via)
		logf("provider: %s = %s (%s)", t.Resolution.Chosen.Name, t.Resolution.Chosen.Value, t.Resolution.Chosen.Where())
	}
	for _, w := range t.Warnings {
		logf("warning: %s", w)
	}
}

// runSeed is the run's seed: --seed, else the seed setting, else 1.
func runSeed(s *Settings, o Options) int64 {
	seed := int64(1)
	if s.Seed != nil {
		seed = *s.Seed
	}
	if o.Seed != nil {
		seed = *o.Seed
	}
	return seed
}

// stoppedByHang says, when a callback hung and so cut the other scenarios short, which one hung and how many
// scenarios stopped early; "" otherwise.
func stoppedByHang(hists []*simulate.History) string {
	var first string
	cut := 0
	for _, h := range hists {
		if h != nil && strings.HasPrefix(h.Aborted, simulate.StoppedByHang) {
			cut++
			if first == "" {
				first = h.Aborted
			}
		}
	}
	if cut == 0 {
		return ""
	}
	return fmt.Sprintf("the run stopped early: %d of %d scenario(s) were cut short after a callback hung, to report it without waiting out its deadline again; checks those scenarios would reach may be not exercised. First: %s", cut, len(hists), first)
}

// childWaitWarnings tells, per callback, the child processes it left running that the platform had to wait
// for after it returned (their command lines, how often, the time it cost, and whether they were idle), so
// that a run slowed by an unwaited `sleep` is never slowed silently.
func childWaitWarnings(hists []*simulate.History) []string {
	type agg struct {
		cmds  []string
		seen  map[string]bool
		waits int
		total time.Duration
		idle  bool
	}
	by := map[string]*agg{}
	var order []string
	for _, h := range hists {
		if h == nil {
			continue
		}
		for _, cw := range h.ChildWaits {
			key := strings.Join(cw.Methods, ", ")
			a := by[key]
			if a == nil {
				a = &agg{seen: map[string]bool{}, idle: true}
				by[key] = a
				order = append(order, key)
			}
			a.waits++
			a.total += cw.Waited
			for _, c := range cw.Children {
				a.idle = a.idle && c.Idle
				if !a.seen[c.Cmdline] {
					a.seen[c.Cmdline] = true
					a.cmds = append(a.cmds, "`"+truncateText(c.Cmdline, 120)+"`")
				}
			}
		}
	}
	slices.Sort(order)
	var out []string
	for _, key := range order {
		a := by[key]
		cmds := a.cmds
		if len(cmds) > 3 {
			cmds = append(cmds[:3:3], fmt.Sprintf("and %d more", len(a.cmds)-3))
		}
		how := "they were still running at each settle bound"
		if a.idle {
			how = fmt.Sprintf("each was idle, so the kit stopped waiting for it after %s", harness.ChildIdleWindow)
		}
		out = append(out, fmt.Sprintf("%s left child process(es) running that it never waited for (%s), in %d settle(s); the kit waited %s in all for them to end (%s). Wait for each child (Popen.wait or communicate) or end it before the callback returns",
			key, strings.Join(cmds, ", "), a.waits, a.total.Round(10*time.Millisecond), how))
	}
	return out
}

// suite returns the scenarios to run: the given ones, else the default suite seeded with the run's seed,
// adjusted to the project's settings.
func (e *Env) suite(o Options) ([]*simulate.Scenario, error) {
	scenarios := o.Scenarios
	if len(scenarios) == 0 {
		var err error
		if scenarios, err = DefaultScenarios(); err != nil {
			return nil, undecided(err)
		}
		for _, sc := range scenarios {
			sc.Seed = sc.Seed*1000003 + e.Seed
		}
	}
	for _, sc := range scenarios {
		e.Adjust(sc)
	}
	return scenarios, nil
}

// jobs is how many scenarios run at once, each on its own fresh replica processes: --jobs, else one per core,
// never more than there are scenarios. Every scenario forks fresh replicas from the run's fork servers, so a
// second slot costs forks, not interpreter starts (measured in docs/performance.md).
func (o Options) jobs(n int) int {
	jobs := o.Jobs
	if jobs <= 0 {
		jobs = runtime.NumCPU()
	}
	return max(1, min(jobs, n))
}

// suiteJobs is how many of the suite's n scenarios run at once: --jobs when given; else, for a provider that
// declares no services, two per core; else one per core (never more than there are scenarios). The suite's
// scenarios spend part of their wall time waiting rather than computing (deadlines' turns on the double's
// timed answers, every scenario on its replicas' starts and handshakes), and without declared services a slot
// costs only forks, so on two cores the default suite ran in 1.75 s with four slots against 2.04 s with two,
// at the same CPU. Each slot runs its own instance of every declared service, an interpreter start each, so
// a provider with services keeps a slot per core: with four slots its suite ran 9 to 25 % longer
// (docs/performance.md, "The default suite: two slots per core without declared services"). Exploration keeps
// a slot per core (jobs): its scenarios are fresh replicas end to end, bound by CPU.
func (o Options) suiteJobs(n, services int) int {
	if o.Jobs > 0 || services > 0 {
		return o.jobs(n)
	}
	return max(1, min(2*runtime.NumCPU(), n))
}

// slotServices says, for the verbose log, what stand-ins the slots run: one instance of each declared
// service per slot.
func slotServices(s *Settings, jobs int) string {
	if s == nil || len(s.Services) == 0 {
		return ""
	}
	return fmt.Sprintf("; %d instance(s) of each of %d declared service(s), one per slot", jobs, len(s.Services))
}

func maxReplicas(scenarios []*simulate.Scenario, floor int) int {
	m := floor
	for _, sc := range scenarios {
		m = max(m, sc.Replicas)
	}
	return m
}

// Env is everything needed to run scenarios against one provider and judge them: the resolved target, the
// Agent configuration with its planted canaries, and the simulator options.
type Env struct {
	Target *Target
	Info   *harness.LoadInfo
	Seed   int64
	Config map[string]any
	Sim    simulate.Options

	planted []secrets.Secret
	trusted []string
}

// NewEnv prepares the configuration and canaries of a run with a seed.
func NewEnv(t *Target, info *harness.LoadInfo, seed int64) (*Env, error) {
	cfg := DefaultConfig(seed)
	if t.Settings.Config != nil {
		mergeConfig(cfg, simulate.CopyMap(t.Settings.Config))
	}
	planted, err := plantCanaries(cfg, t.Settings.SecretFields, NewCanary)
	if err != nil {
		return nil, undecided(err)
	}
	e := &Env{Target: t, Info: info, Seed: seed, Config: cfg, planted: planted}
	secretValues := map[string]bool{}
	for _, p := range planted {
		secretValues[p.Value] = true
	}
	e.trusted = trustedStrings(cfg, secretValues)
	e.Sim = simulate.Options{
		Python: t.Python.Path, ProjectDir: t.Project.Dir, Target: t.Resolution.Chosen.Ref.Target(), Paths: t.Paths,
		Config: cfg, Secrets: planted, Limits: t.Settings.limits(), ForceDebugLogging: t.Settings.ForceDebugLogging,
		Hosts: t.Hosts, Settle: seconds.Duration(t.Settings.SettleS),
		Services: t.Services, Coverage: coverageOptions(t.Settings, Options{}, t.Python.Version),
	}
	return e, nil
}

// Secrets is a new set of the secrets the run planted before any scenario ran (its configuration canaries):
// what an error of the run is masked with. A judged run masks its report with its evidence's set, which
// adds every secret the histories planted and every material the provider returned.
func (e *Env) Secrets() *secrets.Set {
	s := &secrets.Set{}
	for _, p := range e.planted {
		s.AddSecret(p)
	}
	return s
}

// Runnable tells whether scenarios can run at all (the target is an instantiable provider).
func (e *Env) Runnable() bool { return e.Info != nil && e.Info.IsSubclass && e.Info.Instantiated }

// Adjust applies the project's settings (replicas, engine, deadlines) to a scenario.
func (e *Env) Adjust(sc *simulate.Scenario) {
	s := e.Target.Settings
	if s.Replicas > 0 && sc.Replicas < s.Replicas {
		sc.Replicas = s.Replicas
	}
	if s.Engine != "" {
		sc.Engine = s.Engine
	}
	applyDeadlines(sc.Deadlines, s.Deadlines)
}

// Evidence builds the evidence of a set of histories: the planted canaries, the secrets each history planted,
// and every material the provider returned.
func (e *Env) Evidence(hists []*simulate.History) *Evidence {
	ev := &Evidence{Project: e.Target.Project.Dir, Load: e.Info, Secrets: &secrets.Set{}, Material: map[string]string{}, Config: e.Config,
		Skipped: map[string]string{}, TrustedStrings: e.trusted, Static: staticFacts(e.Target),
		EgressAllowed: e.Target.Settings != nil && e.Target.Settings.Egress == egress.PolicyAllow,
		LogLevel:      LogLevelInfo,
		Wrapper:       e.Target.Wrapper, WrapperUnusable: e.Target.WrapperUnusable}
	if e.Target.Settings != nil {
		ev.LogLevel = e.Target.Settings.LogLevel
	}
	ev.Secrets = e.Secrets()
	if !e.Runnable() {
		ev.Skipped["*"] = "the provider is not an instantiable subclass of astrabox.seams.RuntimePreparationProvider, so no scenario could run"
		return ev
	}
	for _, h := range hists {
		ev.AddHistory(h)
	}
	return ev
}

// AddHistory adds a history and the secrets it holds to the evidence.
func (ev *Evidence) AddHistory(h *simulate.History) {
	ev.Histories = append(ev.Histories, h)
	for _, s := range h.Secrets {
		ev.Secrets.AddSecret(s)
	}
	for _, c := range h.Calls() {
		if c.Result == nil || !simulate.KindMaterials.Of(c.Result) {
			continue
		}
		where := fmt.Sprintf("%s of %s (%s)", c.Method, c.Ctx.Session, c.Key)
		for _, f := range c.Result.Files {
			content := ev.texts.str(f.Content)
			if ev.Secrets.Add(content, "material file "+f.Name+" returned by "+where) {
				ev.Material[content] = "file " + f.Name + " from " + where
			}
		}
		for _, k := range slices.Sorted(maps.Keys(c.Result.Environment)) {
			v := c.Result.Environment[k]
			if strings.HasPrefix(v, "/") && strings.Contains(v, "/.astrabox/runtime/") {
				continue // a delivered file's path is not a secret
			}
			if ev.Secrets.Add(v, "environment value "+k+" returned by "+where) {
				ev.Material[v] = "environment " + k + " from " + where
			}
		}
	}
}
