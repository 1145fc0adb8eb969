package simulate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"strings"
	"sync"
	"time"

	"github.com/astrabox-dev/astrabox/internal/double"
	"github.com/astrabox-dev/astrabox/internal/egress"
	"github.com/astrabox-dev/astrabox/internal/harness"
	"github.com/astrabox-dev/astrabox/internal/secrets"
	"github.com/astrabox-dev/astrabox/internal/services"
)

// Options configure a simulation run.
type Options struct {
	// Python is the interpreter that runs the provider.
	Python string
	// ProjectDir is the provider project's directory (the harness's working directory).
	ProjectDir string
	// Target is the entry point's object reference ("pkg.module:Class"); empty means no provider is
	// declared, and the platform prepares Agents and Sessions without callbacks (EP-NONE).
	Target string
	// Paths are code roots to put on sys.path (src layout, package-dir, [tool.astrabox] python-path).
	Paths []string
	// Config is the base Agent configuration; "${ASTRABOX_DOUBLE_URL}" in string values is substituted.
	Config map[string]any
	// Secrets are planted secret values in Config, with their origin.
	Secrets []secrets.Secret
	// Limits bound each replica process.
	Limits harness.Limits
	// ForceDebugLogging sets the provider's root logger to DEBUG so that debug records are scanned too.
	ForceDebugLogging bool
	// Verbose, when set, receives one line per platform action as it happens.
	Verbose io.Writer
	// Epoch is the host clock's start; zero means a fixed date, so that histories are reproducible.
	Epoch time.Time
	// Hosts, when set, are the run's hosts: the fork server of each replica name (with that replica's
	// string-hash seed), shared by the run's scenarios; its owner closes it. Without it, every replica starts
	// its own interpreter. Either way every scenario gets fresh replica processes, a fresh deployment double
	// and fresh host directories.
	Hosts *Hosts
	// Settle bounds how long the platform waits for work a callback left running (threads, timers, tasks,
	// executor jobs, children), after that callback and at the end of the scenario; 0 means DefaultSettle.
	// Nothing is waited for when nothing was left.
	Settle time.Duration
	// Stage, when set, is this scenario's double and replica processes prepared ahead (PrepareStage); Run
	// takes it, or closes it when it cannot (it failed, or has fewer replicas than the scenario needs) and
	// starts fresh ones.
	Stage *Stage
	// Prepared, when set, is the platform Prepare opened ahead for this scenario: Run plays it (with this
	// call's context, Closing and Hang), or, when it was made for another scenario or already played, closes
	// it and opens its own.
	Prepared *Prepared
	// Closing, when set, makes Run stop the scenario's processes and double and remove its host directories
	// in the background once the history is complete, counted in Closing; whoever set it waits for it.
	Closing *sync.WaitGroup
	// Services, when set, are the provider's declared external systems, started by the caller for the run:
	// each scenario resets them and sends each replica's traffic to them through a proxy and its double.
	Services *Services
	// Coverage, when set, has each replica measure which lines of the provider's own code run; each call
	// record then carries what its reply reported (CallRecord.Coverage).
	Coverage *harness.CoverageOptions
	// Hang, when set, is the run's hang latch: a callback that hangs trips it, and every scenario sharing it
	// stops at its next step boundary (History.Aborted starts with StoppedByHang).
	Hang *HangLatch
}

// DefaultSettle is how long the platform waits, at most, for work a callback left running.
const DefaultSettle = 3 * time.Second

// ErrProviderLoad is returned (wrapped) when the provider cannot be loaded at all.
var ErrProviderLoad = errors.New("provider could not be loaded")

type replica struct {
	name string
	proc *harness.Process
	// unsettled are the calls of the current process that left work running which has not ended yet.
	unsettled []pendingWork
	// loaded are the observations of the current process's load reply (the connections and sends the
	// provider's import and constructor made) until the platform that runs it takes them.
	loaded harness.Observations
}

type agentState struct {
	spec         AgentSpec
	version      int
	refreshRev   int
	prepID       string
	config       map[string]any
	generation   string
	sessionBound bool
	declaration  json.RawMessage
}

type box struct {
	id         string
	agent      string
	sandbox    *Sandbox
	generation string
	engineInit bool
	state      string
	version    int
}

type operation struct {
	label    string
	id       string
	agent    string
	box      *box
	deadline time.Duration // host clock (elapsed)
	state    string        // running, done, unresolved, recovered, expired
	replica  string
}

type session struct {
	id         string
	agent      string
	owner      string
	sandbox    *Sandbox
	state      string
	delivered  map[string]bool
	quarantine bool
	stateRead  bool
	blocked    bool // the console blocks sending
	keptInputs []string
	generation string
}

type platform struct {
	ctx   context.Context
	sc    *Scenario
	o     Options
	clock *Clock
	rng   *rand.Rand
	dbl   *double.Double
	hist  *History

	// proxies are the replicas' egress proxies (declared services only), by replica name, with the
	// environment that sends a replica's traffic through its proxy; egress logs what they refused.
	proxies  map[string]*egress.Proxy
	proxyEnv map[string][]string
	egress   egressLog

	mu        sync.Mutex // guards hist.Events and sandboxes (the harness calls back from its goroutines)
	replicas  []*replica
	info      *harness.LoadInfo
	agents    map[string]*agentState
	sandboxes map[string]*Sandbox
	boxes     []*box
	sessions  map[string]*session
	ops       []*operation
	attempts  map[string]bool

	step    int
	stepOp  string
	nextBox int
	nextSB  int
	current map[string]*CallRecord // replica -> call in flight
	callSeq map[string]int         // replica -> calls made in this run
	// fills is what the provider answered that the scenario's fills draw on.
	fills fillState
	// callTags maps "replica|pid:harness call id" (the X-Astrabox-Call header the harness adds to the
	// provider's requests to the double) to the call's key.
	callTags map[string]string
	// conns are the connections the replicas' processes reported opening, for requests without that header.
	conns connIndex
	hosts *Hosts
	// hostDirs are the host directories of every replica process started for this scenario, removed at
	// its end.
	hostDirs []*host
	// windows are the stretches of double requests that arrived while the platform waited for a call's
	// leftover work: those requests are that work's.
	windows []settleWindow
	// spare are the processes of a stage this scenario did not need; they are closed with its own.
	spare []*replica
	// begun is when the scenario began: project files modified since were written during it.
	begun time.Time
	// materials holds each distinct material file content of the scenario once.
	materials materials
	// runErr is a failure of the kit's own that stops the scenario (a declared service refused a control
	// request, so the state the suite meant to set is unknown); Run returns it.
	runErr error
	// ahead is the scheduling of a platform opened ahead beside running scenarios (PrepareAhead): its
	// replica processes load in the idle class until the scenario takes it.
	ahead idleClass
}

// fail stops the scenario after the current step with a failure of the kit's own.
func (p *platform) fail(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.runErr == nil {
		p.runErr = err
	}
}

// DefaultEpoch is the fixed start of the host clock for reproducible histories.
var DefaultEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Run plays a scenario against the provider and returns its history. The error is for the kit's own
// failures (the double or a replica could not start, the provider could not be loaded); everything the
// provider does wrong is in the history.
func Run(ctx context.Context, sc *Scenario, o Options) (*History, error) {
	if pr := o.Prepared; pr != nil {
		if pr.For(sc) {
			if h, played, err := pr.play(ctx, o); played {
				return h, err
			}
		} else {
			pr.Close()
		}
	}
	p := newPlatform(ctx, sc, o)
	if err := p.open(); err != nil {
		p.shut()
		return nil, err
	}
	defer p.shut()
	return p.play()
}

// newPlatform is the platform of one scenario, before anything of it started.
func newPlatform(ctx context.Context, sc *Scenario, o Options) *platform {
	if o.Epoch.IsZero() {
		o.Epoch = DefaultEpoch
	}
	sc = sc.Clone() // filled in while it plays; the history records the filled copy
	p := &platform{
		ctx: ctx, sc: sc, o: o,
		clock:     NewClock(o.Epoch),
		rng:       rand.New(rand.NewSource(sc.Seed)),
		agents:    map[string]*agentState{},
		sandboxes: map[string]*Sandbox{},
		sessions:  map[string]*session{},
		attempts:  map[string]bool{},
		current:   map[string]*CallRecord{},
		callSeq:   map[string]int{},
		callTags:  map[string]string{},
		hist:      &History{Scenario: sc.Name, Seed: sc.Seed, Replicas: sc.Replicas, Engine: sc.Engine, Secrets: append([]secrets.Secret(nil), o.Secrets...), Played: sc},
	}
	p.begun = time.Now()
	p.hosts = o.Hosts
	if p.hosts == nil {
		p.hosts = unforked(sc.Seed)
	}
	if p.o.Settle <= 0 {
		p.o.Settle = DefaultSettle
	}
	return p
}

// open readies the scenario's platform up to its first step: the declared services reset, a fresh double and
// fresh replica processes (prepared ahead by a stage, or started now), the starting consent seeded. Nothing
// of another scenario (state, threads, requests) reaches this one. Stages are not used with declared
// services (their egress proxies belong to the scenario's platform; see Prepare instead). Whatever open
// started is stopped by shut, also when it fails.
func (p *platform) open() error {
	o, sc := p.o, p.sc
	if err := o.Services.reset(p.ctx); err != nil {
		return fmt.Errorf("reset the declared services: %w", err)
	}
	staged := o.Stage != nil && o.Target != "" && o.Services == nil && o.Stage.take(p, sc.Replicas)
	if o.Stage != nil && !staged {
		o.Stage.Close()
	}
	if !staged {
		d, err := double.Start(double.Options{Clock: p.clock.Now, Seed: sc.Seed, Upstreams: o.Services.upstreams()})
		if err != nil {
			return fmt.Errorf("start the deployment double: %w", err)
		}
		p.dbl = d
		for i := 0; i < sc.Replicas; i++ {
			p.replicas = append(p.replicas, &replica{name: ReplicaName(i + 1)})
		}
	}
	p.hist.Principals = startingConsent(sc)
	if err := p.seedConsent(); err != nil {
		return err
	}
	if staged {
		return p.startReplicasOf(p.unstarted())
	}
	if o.Target != "" {
		return p.startReplicas()
	}
	return nil
}

// play plays the steps of an opened platform and completes its history.
func (p *platform) play() (*History, error) {
	if p.info != nil && p.info.Name != nil {
		p.hist.Provider = *p.info.Name
	}
	for _, a := range p.sc.Agents {
		p.agents[a.ID] = &agentState{spec: a, version: a.Version, prepID: p.newID("prep"), config: p.agentConfig(a.ID, a.Version)}
	}
	p.playSteps()
	p.finish()
	if p.runErr != nil {
		return nil, p.runErr
	}
	return p.hist, nil
}

// shut stops what open started: in the background, counted in Options.Closing, when that is set. A
// platform whose double never started has nothing to stop.
func (p *platform) shut() {
	if p.dbl == nil {
		return
	}
	if c := p.o.Closing; c != nil {
		c.Add(1)
		go func() { defer c.Done(); p.close() }()
		return
	}
	p.close()
}

// started records that a replica process started and loaded the provider.
func (p *platform) started(r *replica) {
	p.event(&Event{Op: "start", Kind: EventPlatform, Replica: r.name, Message: "replica " + r.name + " started and loaded " + p.o.Target})
}

// startReplica starts a fresh process of a replica, on a fresh host (its own directories).
func (p *platform) startReplica(r *replica) error {
	h, err := p.hosts.newHost(r.name)
	if err != nil {
		return err
	}
	p.mu.Lock()
	p.hostDirs = append(p.hostDirs, h)
	p.mu.Unlock()
	env, err := p.egressEnv(r.name)
	if err != nil {
		return err
	}
	proc, info, loaded, err := spawn(p.ctx, p.o, p.dbl, r.name, replicaSandbox{p: p, r: r}, p.hosts.ForkServer(r.name), append(append([]string(nil), h.env...), env...), p.ahead.lower)
	if err != nil {
		return err
	}
	p.mu.Lock()
	if p.info == nil {
		p.info = info
	}
	r.proc = proc
	r.unsettled = nil
	p.mu.Unlock()
	p.takeConns(r.name, proc.PID(), &loaded)
	return nil
}

// egressEnv starts a replica's egress proxy the first time the replica starts in this scenario (a replaced
// process keeps its proxy) and returns the environment that sends its traffic through it. None without
// declared services.
func (p *platform) egressEnv(name string) ([]string, error) {
	if p.o.Services == nil {
		return nil, nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if env, ok := p.proxyEnv[name]; ok {
		return env, nil
	}
	px, env, err := p.o.Services.proxy(name, p.dbl, p.observeEgress)
	if err != nil {
		return nil, fmt.Errorf("start the egress proxy of replica %s: %w", name, err)
	}
	if p.proxies == nil {
		p.proxies, p.proxyEnv = map[string]*egress.Proxy{}, map[string][]string{}
	}
	p.proxies[name], p.proxyEnv[name] = px, env
	return env, nil
}

// spawn starts one replica process of the provider and loads it. It returns the load reply's
// observations too: connections the provider opened while it loaded (an import, a constructor) are
// matched to their requests like any other. started, when set, is given the process once it answered the
// handshake, before it loads the provider.
func spawn(ctx context.Context, o Options, dbl *double.Double, name string, sb harness.SandboxServer, z *harness.Zygote, hostEnv []string, started func(*harness.Process)) (*harness.Process, *harness.LoadInfo, harness.Observations, error) {
	url, err := dbl.URL(name)
	if err != nil {
		return nil, nil, harness.Observations{}, fmt.Errorf("open the double for replica %s: %w", name, err)
	}
	proc, err := harness.Start(ctx, harness.Options{
		Python: o.Python, ProjectDir: o.ProjectDir, Replica: name,
		Env:    append([]string{"ASTRABOX_DOUBLE_URL=" + url}, hostEnv...),
		Limits: o.Limits, Sandbox: sb, Zygote: z,
	})
	if err != nil {
		return nil, nil, harness.Observations{}, fmt.Errorf("start replica %s: %w", name, err)
	}
	if started != nil {
		started(proc)
	}
	reply, err := proc.Load(ctx, harness.LoadArgs{Target: o.Target, Paths: o.Paths, ProjectRoot: o.ProjectDir, ForceDebugLogging: o.ForceDebugLogging, Coverage: o.Coverage})
	if err != nil {
		proc.Close()
		return nil, nil, harness.Observations{}, fmt.Errorf("%w: replica %s: %w", ErrProviderLoad, name, err)
	}
	if !reply.OK {
		proc.Close()
		msg := "load failed"
		if reply.Error != nil {
			msg = reply.Error.Type + ": " + reply.Error.Message
		}
		return nil, nil, harness.Observations{}, fmt.Errorf("%w: %s", ErrProviderLoad, msg)
	}
	var info harness.LoadInfo
	if err := json.Unmarshal(reply.Value, &info); err != nil {
		proc.Close()
		return nil, nil, harness.Observations{}, fmt.Errorf("%w: bad load reply: %w", ErrProviderLoad, err)
	}
	if !info.IsSubclass || !info.Instantiated {
		proc.Close()
		return nil, nil, harness.Observations{}, fmt.Errorf("%w: %s is not an instantiable subclass of astrabox.seams.RuntimePreparationProvider", ErrProviderLoad, o.Target)
	}
	return proc, &info, reply.Observations, nil
}

// close stops the scenario's replica processes and its double, and removes its host directories.
func (p *platform) close() {
	closeAll(append(append([]*replica(nil), p.replicas...), p.spare...))
	for _, px := range p.proxies {
		px.Close()
	}
	p.dbl.Close()
	for _, h := range p.hostDirs {
		removeTree(h.root)
	}
}

// finish waits for the work callbacks left running, then collects the double's requests and the inventory
// into the history.
func (p *platform) finish() {
	p.releaseHeld()
	p.settleEnd()
	p.releaseHeld()
	p.waitRequestsDone(2 * time.Second)
	methods := map[string]string{} // call key -> callback method
	for _, c := range p.hist.Calls() {
		methods[c.Key] = string(c.Method)
	}
	for _, rq := range p.dbl.Requests() {
		hr := Request{Seq: rq.Seq, Replica: rq.Replica, Service: rq.Service, Host: rq.Host, Method: rq.Method, Path: rq.Path, Operation: rq.Operation,
			Status: rq.Status, Applied: rq.Applied, ApplyOrder: rq.ApplyOrder, Fenced: rq.Fenced, Held: rq.Held,
			Delayed: rq.Delayed, Dropped: rq.Dropped, Forbidden: rq.Forbidden, body: rq.Body}
		if rq.Call != nil {
			hr.Call = rq.Call.CallID
			hr.Callback = rq.Call.Callback
		}
		if key := p.windowOf(rq.Replica, rq.Seq); key != "" {
			hr.Background = true
		}
		// The harness tags requests (by header, or by the connection they came over) with the call whose
		// code made them: trust that over the call that happened to be in flight when the request arrived.
		p.attribute(&hr, rq, methods)
		if json.Valid(rq.Body) && len(rq.Body) > 0 {
			hr.Body = json.RawMessage(rq.Body)
		}
		var spec *services.Spec
		if rq.Service != "" {
			if sp, ok := p.o.Services.spec(rq.Service); ok {
				spec = &sp
			}
		}
		ClassifyRequest(&hr, spec, rq.Query, rq.Header, rq.Body)
		p.hist.Requests = append(p.hist.Requests, hr)
	}
	for _, t := range p.dbl.IssuedTokens() {
		p.hist.Secrets = append(p.hist.Secrets, secrets.Secret{Value: t, Origin: "credential issued by the deployment double", Kind: secrets.KindCredential})
	}
	p.hist.Secrets = append(p.hist.Secrets, p.serviceSecrets(p.dbl.Requests())...)
	p.hist.Egress = p.egress.sorted()
	p.placeEgress(p.hist.Egress, methods)
	for _, b := range p.boxes {
		ib := InventoryBox{ID: b.id, Agent: b.agent, SandboxID: b.sandbox.ID, Generation: b.generation, EngineInitialized: b.engineInit, State: b.state}
		ib.Files = b.sandbox.Paths()
		p.hist.Inventory = append(p.hist.Inventory, ib)
	}
	p.hist.Files = p.writtenFiles()
}

func (p *platform) waitRequestsDone(max time.Duration) {
	deadline := time.Now().Add(max)
	for time.Now().Before(deadline) {
		if p.requestsDone() {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// requestsDone reports whether every request the double has received so far has been answered (or dropped).
func (p *platform) requestsDone() bool {
	for _, rq := range p.dbl.Requests() {
		if !rq.Done {
			return false
		}
	}
	return true
}

// newID returns a deterministic identifier for this run.
func (p *platform) newID(prefix string) string {
	return fmt.Sprintf("%s-%08x", prefix, p.rng.Uint32())
}

func (p *platform) token(prefix string) string {
	b := make([]byte, 18)
	for i := range b {
		b[i] = byte(p.rng.Intn(256))
	}
	return prefix + hex.EncodeToString(b)
}

func (p *platform) event(e *Event) *Event {
	p.mu.Lock()
	defer p.mu.Unlock()
	e.Seq = len(p.hist.Events) + 1
	e.Step = p.step
	if e.Op == "" {
		e.Op = p.stepOp
	}
	e.At = p.clock.Elapsed().Seconds()
	p.hist.Events = append(p.hist.Events, e)
	if p.o.Verbose != nil {
		fmt.Fprintf(p.o.Verbose, "step %d %s %s %s\n", e.Step, e.Op, e.Replica, e.Message)
	}
	return e
}

func (p *platform) refuse(replica, code, format string, args ...any) {
	p.event(&Event{Kind: EventOutcome, Replica: replica, Code: code, Message: fmt.Sprintf(format, args...)})
}

func (p *platform) replicaFor(st *Step) *replica {
	if st.Replica != "" {
		return p.replicas[replicaIndex(st.Replica, len(p.replicas))]
	}
	return p.replicas[0]
}

// agentConfig is the detached resolved Agent configuration of one version: the base configuration with the
// version folded into the authored instructions. It never names a Session (PLAN-DETACHED).
func (p *platform) agentConfig(agentID string, version int) map[string]any {
	cfg := CopyMap(p.o.Config)
	for k, v := range p.sc.Config {
		cfg[k] = CopyValue(v)
	}
	if a, ok := cfg["agent"].(map[string]any); ok && version > 1 {
		if s, ok := a["instructions"].(string); ok {
			a["instructions"] = fmt.Sprintf("%s (revision %d)", s, version)
		}
	}
	return cfg
}

// substitute replaces ${ASTRABOX_DOUBLE_URL} in every string of a configuration.
func substitute(v any, url string) any {
	switch t := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, x := range t {
			m[k] = substitute(x, url)
		}
		return m
	case []any:
		s := make([]any, len(t))
		for i, x := range t {
			s[i] = substitute(x, url)
		}
		return s
	case string:
		return strings.ReplaceAll(t, "${ASTRABOX_DOUBLE_URL}", url)
	default:
		return t
	}
}

// generation derives the runtime generation from the resolved recipe, the provider name and the plan's
// declaration (BOUND-GENERATION).
func (p *platform) generation(a *agentState) string {
	recipe, _ := json.Marshal(a.config)
	h := sha256.New()
	fmt.Fprintf(h, "recipe=%s\nversion=%d\nprovider=%s\nbound=%v\ndeclaration=", recipe, a.version, p.hist.Provider, a.sessionBound)
	h.Write(canonicalDeclaration(a.declaration))
	return "gen-" + hex.EncodeToString(h.Sum(nil))[:12]
}

// canonicalDeclaration is a plan's declaration as the generation hash reads it: CanonicalJSON, except that
// an absent declaration hashes as the empty object {} (so that the generations of providers that declare
// nothing stay what they were).
func canonicalDeclaration(raw json.RawMessage) []byte {
	if len(raw) == 0 {
		return []byte("{}")
	}
	return CanonicalJSON(raw)
}

// CallHeader is the header the harness adds to the provider's requests to the deployment double, naming the
// harness process and call whose code made the request.
const CallHeader = "X-Astrabox-Call"

// releaseHeld releases held requests one at a time in arrival order, waiting for each to finish, so that the
// order in which held writes land is the same on every run. It returns how many it released.
func (p *platform) releaseHeld() int {
	n := 0
	for {
		seq, ok := p.dbl.ReleaseNext()
		if !ok {
			return n
		}
		n++
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) {
			done := false
			for _, rq := range p.dbl.Requests() {
				if rq.Seq == seq {
					done = rq.Done
					break
				}
			}
			if done {
				break
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
}
