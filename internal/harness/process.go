package harness

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Options configure one harness process.
type Options struct {
	// Python is the interpreter to run (default "python3" from PATH).
	Python string
	// ProjectDir is the working directory: the provider project.
	ProjectDir string
	// Replica names the simulated platform replica (default "r1").
	Replica string
	// Env holds extra NAME=value entries added to the inherited environment,
	// for example ASTRABOX_DOUBLE_URL.
	Env []string
	// Limits bound the process; zero fields take their defaults.
	Limits Limits
	// Sandbox answers the provider's SandboxHandle calls. Without one, every
	// sandbox operation raises OSError in the provider.
	Sandbox SandboxServer
	// Verbose, when set, receives one line per lifecycle event.
	Verbose io.Writer
	// Zygote, when set, forks the process from that fork server instead of starting an interpreter (same
	// Python and project directory).
	Zygote *Zygote
}

// SandboxServer answers SandboxHandle operations made by the provider. Each
// request is served on its own goroutine while the call that made it is in
// flight; ctx ends when the process dies, and Close waits for Sandbox to
// return, so an implementation must honour ctx.
type SandboxServer interface {
	Sandbox(ctx context.Context, r SandboxRequest) SandboxResponse
}

// Reply is the harness's answer to one call.
type Reply struct {
	ID int64
	// OK is true when the callback returned; Value then holds the encoded
	// result (see Result). Otherwise Error holds the exception.
	OK       bool
	Value    json.RawMessage
	Error    *PyError
	Duration time.Duration
	// Observations made during the call (and background ones the harness
	// attached before the reply).
	Observations Observations
	// Stdout and Stderr are the provider's output since the previous call's
	// sync marker.
	Stdout, Stderr Capture
	// CancelSent is true when the deadline passed (or ctx ended) and cancel
	// was sent before the reply came.
	CancelSent bool
	// CancelReceived is true when that cancel reached the callback while it
	// was still running (its asyncio task was cancelled). A cancel sent but
	// not received crossed the reply, or met synchronous code.
	CancelReceived bool
	// HeldPastDeadline is true when the callback held the harness's event loop through its deadline (a
	// synchronous stretch that began before the deadline and ended after it), judged on the loop's own order
	// of events: a cancel sent but not received then met synchronous code, not a reply already on its way.
	HeldPastDeadline bool
	// WaitedUnits are the units of the call's work (threads, executor jobs, tasks it started; see Issuer) that
	// the callback waited for before its own code ended, as the harness saw it: joined, their result taken,
	// awaited to a normal end. A request whose Issuer is another unit of the call was made by work the
	// callback did not wait for.
	WaitedUnits []int64
	// Exit is set when the callback raised SystemExit or KeyboardInterrupt: the process ends right after
	// the reply (see WaitExit).
	Exit *ExitInfo
	// Coverage is what the provider's own code ran since the previous reply (nil when coverage is off).
	Coverage *CoverageReport
}

// Result decodes Value of a callback reply.
func (r *Reply) Result() (*Result, error) {
	if !r.OK {
		return nil, fmt.Errorf("call %d failed: %w", r.ID, r.Error)
	}
	var res Result
	if err := json.Unmarshal(r.Value, &res); err != nil {
		return nil, fmt.Errorf("decode reply value of call %d: %w", r.ID, err)
	}
	return &res, nil
}

// LoadInfo decodes Value of a load reply.
func (r *Reply) LoadInfo() (*LoadInfo, error) {
	if !r.OK {
		return nil, fmt.Errorf("load failed: %w", r.Error)
	}
	var li LoadInfo
	if err := json.Unmarshal(r.Value, &li); err != nil {
		return nil, fmt.Errorf("decode load reply: %w", err)
	}
	return &li, nil
}

// Process is one running harness. Its methods are safe for concurrent use;
// calls are serialised (the harness runs one call at a time).
//
// The work is split by job: a launcher starts the process (launch.go, zygote.go: a warden or a fork server
// that supervises it), the protocol client talks to it (client.go), supervision bounds and ends it
// (supervise.go), classify turns its end into a ProcessError (classify.go), and its lifecycle state lives
// behind mu (lifecycle.go).
type Process struct {
	o      Options
	lim    Limits
	proc   *launched
	pid    int
	cookie string
	token  string
	hello  Hello

	reqW, respR, outR, errR *os.File
	stdout, stderr          *stream

	writeMu sync.Mutex
	callMu  sync.Mutex
	nextID  int64

	helloCh chan Hello
	replies chan replyMsg
	// returned carries the ids of calls whose callback code has ended (the harness's "returned" message).
	returned chan int64

	mu         sync.Mutex
	st         lifecycle
	bg         Observations
	startTicks uint64 // the process's start time (clock ticks after boot), 0 if unknown
	sandboxCtx context.Context
	sandboxEnd context.CancelFunc

	waitDone  chan struct{} // the harness was reaped
	exited    chan struct{} // process gone and fatal computed
	readDone  chan struct{} // reader stopped
	outDone   chan struct{} // stdout drained to EOF
	errDone   chan struct{} // stderr drained to EOF
	stopPoll  chan struct{}
	wg        sync.WaitGroup
	closeOnce sync.Once
	closeErr  error
	sweepMu   sync.Mutex
}

const (
	stderrRecent = 64 << 10 // rolling stderr kept for stack dumps and tails
	tailForError = 4 << 10  // stderr tail put in a ProcessError
	markerWait   = time.Second
	pollEvery    = 50 * time.Millisecond
)

// Start launches the harness for o and waits for its hello. ctx bounds only
// the start and handshake: the process lives until Close or Kill (or its own
// death), whatever happens to ctx later. Errors are
// *ProcessError: KindStart (python cannot be executed, or no process can be
// created), KindExited or KindSignaled (it ended before hello: not a Python 3,
// a broken install), KindHung (no hello within Limits.StartTimeout) or
// KindProtocol (wrong protocol version or cookie).
func Start(ctx context.Context, o Options) (*Process, error) {
	if o.Python == "" {
		o.Python = "python3"
	}
	if o.Replica == "" {
		o.Replica = "r1"
	}
	p := &Process{
		o:        o,
		lim:      o.Limits.WithDefaults(),
		cookie:   randomHex(16),
		token:    randomHex(16),
		helloCh:  make(chan Hello, 1),
		replies:  make(chan replyMsg, 8),
		returned: make(chan int64, 8),
		waitDone: make(chan struct{}),
		exited:   make(chan struct{}),
		readDone: make(chan struct{}),
		outDone:  make(chan struct{}),
		errDone:  make(chan struct{}),
		stopPoll: make(chan struct{}),
	}
	p.sandboxCtx, p.sandboxEnd = context.WithCancel(context.Background())
	p.stdout = newStream("stdout", p.cookie, p.lim.CaptureBytes, 4<<10)
	p.stderr = newStream("stderr", p.cookie, p.lim.CaptureBytes, stderrRecent)

	sdk, err := SDKDir()
	if err != nil {
		return nil, &ProcessError{Kind: KindStart, Replica: o.Replica, ExitCode: -1, Err: err}
	}
	if err := p.launch(sdk); err != nil {
		return nil, err
	}
	p.logf("started %s (pid %d, supervisor %d)", o.Python, p.pid, p.proc.supervisor)

	t := time.NewTimer(p.lim.StartTimeout)
	defer t.Stop()
	select {
	case h := <-p.helloCh:
		if err := p.checkHello(h); err != nil {
			p.abort(KindProtocol, err)
			return nil, p.startFailure(nil)
		}
		p.hello = h
		p.logf("hello: protocol %d, %s %s at %s", h.Protocol, h.Implementation, h.PythonVersion(), h.Executable)
		return p, nil
	case <-p.exited:
		return nil, p.startFailure(errors.New("it ended before the harness handshake; is it a Python 3.9+ interpreter?"))
	case <-t.C:
		p.abort(KindHung, fmt.Errorf("no hello from the harness within %s", p.lim.StartTimeout))
		return nil, p.startFailure(nil)
	case <-ctx.Done():
		p.abort(KindClosed, fmt.Errorf("start cancelled: %w", ctx.Err()))
		return nil, p.startFailure(nil)
	}
}

// procPipes are the four pipes between the kit and one harness process: ours (parent) and the child's ends.
type procPipes struct {
	reqR, reqW, respR, respW, outR, outW, errR, errW *os.File
}

func (pp *procPipes) child() []*os.File { return []*os.File{pp.reqR, pp.respW, pp.outW, pp.errW} }

func (pp *procPipes) closeAll() {
	for _, f := range []*os.File{pp.reqR, pp.reqW, pp.respR, pp.respW, pp.outR, pp.outW, pp.errR, pp.errW} {
		if f != nil {
			f.Close()
		}
	}
}

func newPipes() (*procPipes, error) {
	pp := &procPipes{}
	for _, pair := range [][2]**os.File{{&pp.reqR, &pp.reqW}, {&pp.respR, &pp.respW}, {&pp.outR, &pp.outW}, {&pp.errR, &pp.errW}} {
		r, w, err := os.Pipe()
		if err != nil {
			pp.closeAll()
			return nil, fmt.Errorf("create pipe: %w", err)
		}
		*pair[0], *pair[1] = r, w
	}
	return pp, nil
}

// launch starts the harness: forked by the fork server when there is one (an optimisation, never a reason to
// fail: on any error it falls back, on fresh pipes, so that a fork that happened after all cannot share
// them), else under a warden.
func (p *Process) launch(sdk string) error {
	spec := launchSpec{
		python: p.o.Python,
		script: filepath.Join(sdk, "astrabox", "_harness", "__main__.py"),
		dir:    p.o.ProjectDir,
		env:    append(p.environ(), "ASTRABOX_PYCACHE="+pycacheDir(sdk)),
	}
	if n := procsCap(); n > 0 && p.o.Zygote != nil {
		// The fork server's harness sets it itself (zygote.py); a warden sets it on the harness it starts.
		spec.zygoteEnv = []string{fmt.Sprintf("ASTRABOX_LIMIT_NPROC=%d", n)}
	}
	if err := ensureRoom("a harness for replica " + p.o.Replica); err != nil {
		return &ProcessError{Kind: KindStart, Replica: p.o.Replica, ExitCode: -1, Err: err}
	}
	launchers := []launcher{wardenLauncher{}}
	if p.o.Zygote != nil {
		launchers = []launcher{p.o.Zygote, wardenLauncher{}}
	}
	for i, l := range launchers {
		pp, err := newPipes()
		if err != nil {
			return &ProcessError{Kind: KindStart, Replica: p.o.Replica, ExitCode: -1, Err: err}
		}
		spec.pipes = pp
		proc, err := l.launch(spec)
		if err != nil {
			pp.closeAll()
			if i < len(launchers)-1 {
				p.logf("%v; starting an interpreter instead", err)
				continue
			}
			return &ProcessError{Kind: KindStart, Replica: p.o.Replica, ExitCode: -1, Err: err}
		}
		for _, f := range pp.child() {
			f.Close()
		}
		p.proc, p.pid = proc, proc.pid
		p.reqW, p.respR, p.outR, p.errR = pp.reqW, pp.respR, pp.outR, pp.errR
		p.goroutines()
		return nil
	}
	return nil
}

// goroutines starts the drains, the reader, the waiter and the memory poller of a started process.
func (p *Process) goroutines() {
	if info, ok := readStat(p.pid); ok {
		p.startTicks = info.start
	}
	p.wg.Add(5)
	go p.drain(p.outR, p.stdout, p.outDone)
	go p.drain(p.errR, p.stderr, p.errDone)
	go p.readLoop()
	go p.waitLoop()
	go p.pollMemory()
}

// environ builds the child environment: ours, minus harness variables, plus
// Options.Env, plus the protocol variables.
func (p *Process) environ() []string {
	var env []string
	for _, kv := range os.Environ() {
		if inherited(kv) {
			env = append(env, kv)
		}
	}
	env = append(env, p.o.Env...)
	return append(env,
		"ASTRABOX_HARNESS_COOKIE="+p.cookie,
		fmt.Sprintf("ASTRABOX_HARNESS_PROTOCOL=%d", ProtocolVersion),
		"ASTRABOX_REPLICA="+p.o.Replica,
		"ASTRABOX_REPLICA_TOKEN="+p.token,
		fmt.Sprintf("ASTRABOX_LIMIT_AS=%d", p.lim.AddressSpace),
		fmt.Sprintf("ASTRABOX_LIMIT_NOFILE=%d", p.lim.OpenFiles),
		"MALLOC_ARENA_MAX=2",
		"PYTHONDONTWRITEBYTECODE=1",
	)
}

// inherited reports whether an entry of the kit's own environment passes to a harness process or fork server:
// every one but those the kit sets per harness (isHarnessVar) and CPython's switches for the perf profiler
// (perfVars).
func inherited(kv string) bool {
	if isHarnessVar(kv) {
		return false
	}
	for _, v := range perfVars {
		if strings.HasPrefix(kv, v) {
			return false
		}
	}
	return true
}

// perfVars are CPython's switches for the Linux perf profiler: a perf map (3.12+) or jitdump files (3.13+),
// written through a descriptor the interpreter opens as it starts. A harness then takes over its descriptors
// for the protocol, so the interpreter's writes landed in the protocol and killed the harness ("harness
// protocol corrupted"). A kit started with either set, to profile some other program, keeps it from its
// harnesses; ASTRABOX_PROFILE_DIR profiles them instead (docs/performance.md).
var perfVars = []string{"PYTHONPERFSUPPORT=", "PYTHON_PERF_JIT_SUPPORT="}

// isHarnessVar reports whether an environment entry is one the kit sets per harness process (and so must not
// be inherited from the kit's own environment).
func isHarnessVar(kv string) bool {
	return strings.HasPrefix(kv, "ASTRABOX_HARNESS_") || strings.HasPrefix(kv, "ASTRABOX_REPLICA") ||
		strings.HasPrefix(kv, "ASTRABOX_LIMIT_") || strings.HasPrefix(kv, "ASTRABOX_PYCACHE=")
}

func (p *Process) checkHello(h Hello) error {
	if h.Protocol != ProtocolVersion {
		return fmt.Errorf("the harness speaks protocol %d, this astrabox speaks %d: the embedded SDK and the binary do not match", h.Protocol, ProtocolVersion)
	}
	if h.Cookie != p.cookie {
		return errors.New("the hello carries the wrong cookie: another program answered on the protocol descriptors")
	}
	return nil
}

// startFailure waits for the process to be gone and returns its error.
func (p *Process) startFailure(extra error) error {
	p.Close()
	pe := p.fatalErr()
	if extra != nil && pe.Err == nil {
		pe.Err = extra
	}
	return pe
}

// Hello returns the harness's hello message.
func (p *Process) Hello() Hello { return p.hello }

// Replica returns the replica name.
func (p *Process) Replica() string { return p.o.Replica }

// PID returns the harness's process id (also its process group and session id).
func (p *Process) PID() int { return p.pid }

// ReplicaToken returns the token in the environment of the harness and of
// every process it starts.
func (p *Process) ReplicaToken() string { return p.token }

// Alive reports whether the process is running and usable.
func (p *Process) Alive() bool {
	select {
	case <-p.waitDone:
		return false
	default:
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.st.kill.kind == ""
}

// Background drains the observations that arrived in background messages
// since the last call to Background.
func (p *Process) Background() Observations {
	p.mu.Lock()
	defer p.mu.Unlock()
	o := p.bg
	p.bg = Observations{}
	return o
}

// Load imports and instantiates the provider (the load method), bounded by
// Limits.LoadTimeout. A failing import is a Reply with OK false.
func (p *Process) Load(ctx context.Context, a LoadArgs) (*Reply, error) {
	if a.Paths == nil {
		a.Paths = []string{}
	}
	return p.Call(ctx, "load", a, p.lim.LoadTimeout)
}

// Call runs method with args (JSON-encodable) and waits for the reply. With
// timeout > 0, at the deadline (or when ctx ends) cancel is sent and the
// harness gets Limits.Grace to reply; without a reply it is sent SIGUSR1 for a
// stack dump, killed, and the call fails with KindHung. Call returns a *Reply
// whenever the harness replied and a *ProcessError when it did not.
func (p *Process) Call(ctx context.Context, method string, args any, timeout time.Duration) (*Reply, error) {
	p.callMu.Lock()
	defer p.callMu.Unlock()
	if err := p.deadErr(method); err != nil {
		return nil, err
	}
	p.nextID++
	id := p.nextID
	if args == nil {
		args = map[string]any{}
	}
	sendBound := p.lim.StartTimeout
	if timeout > 0 {
		sendBound += timeout
	}
	if err := p.send(callMsg{Kind: "call", ID: id, Method: method, Args: args, TimeoutS: timeout.Seconds()}, sendBound); err != nil {
		var uerr *json.UnsupportedTypeError
		var verr *json.UnsupportedValueError
		var merr *json.MarshalerError
		if errors.As(err, &uerr) || errors.As(err, &verr) || errors.As(err, &merr) {
			return nil, fmt.Errorf("call %s: %w", method, err)
		}
		// A write fails when the harness is gone or going: classify by its
		// exit when it comes, else the channel is broken.
		select {
		case <-p.waitDone:
		case <-time.After(500 * time.Millisecond):
			p.abort(KindProtocol, fmt.Errorf("send call: %w", err))
		}
		return nil, p.callFailure(method)
	}
	p.logf("call %d %s", id, method)
	return p.awaitReply(ctx, id, method, timeout)
}

// ReplyBound bounds the kit's own work after a callback returned: the harness inspects what the callback left
// running, encodes its value (a large material takes a while) and sends it. The callback's deadline no longer
// runs then; past this bound the kit gives up on the reply.
const ReplyBound = 60 * time.Second

// ErrKitReply says that the harness took longer than ReplyBound to send a reply after the callback returned:
// the kit's own slowness, not the provider's.
var ErrKitReply = errors.New("the kit's own encoding of the reply took too long (a machine under heavy load, or a kit bug: please report it)")

// awaitReply waits for the reply to call id: at the deadline or when ctx ends it sends cancel, and after
// Limits.Grace without a reply it dumps the stacks and kills the process. Every branch ends.
func (p *Process) awaitReply(ctx context.Context, id int64, method string, timeout time.Duration) (*Reply, error) {
	var deadline <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		deadline = t.C
	}
	done := ctx.Done()
	cancelSent := false
	var grace, kit <-chan time.Time
	for {
		select {
		case rid := <-p.returned:
			if rid != id {
				continue
			}
			// The callback's own code has ended: its deadline (and a cancel's grace) stop here. What is left,
			// inspecting what it left running, encoding its value and sending it, is the kit's own work, bounded
			// by ReplyBound and never counted against the provider.
			deadline, done, grace = nil, nil, nil
			kit = time.After(ReplyBound)
		case <-kit:
			p.hang(fmt.Errorf("the harness did not send the reply of %s within %s after the callback returned: %w", method, ReplyBound, ErrKitReply))
			return nil, p.callFailure(method)
		case r := <-p.replies:
			if r.ID != id {
				p.logf("dropping a stale reply for call %d", r.ID)
				continue
			}
			return p.finish(r, cancelSent), nil
		case <-p.exited:
			select {
			case r := <-p.replies:
				if r.ID == id {
					return p.finish(r, cancelSent), nil
				}
			default:
			}
			return nil, p.callFailure(method)
		case <-deadline:
			// A reply already here came before the cancel could be sent (both were ready at once).
			if r, ok := p.queuedReply(id); ok {
				return p.finish(r, cancelSent), nil
			}
			deadline, done = nil, nil
			cancelSent, grace = p.sendCancel(id, method, "deadline of "+timeout.String()+" passed")
		case <-done:
			deadline, done = nil, nil
			cancelSent, grace = p.sendCancel(id, method, "context ended: "+ctx.Err().Error())
		case <-grace:
			p.hang(fmt.Errorf("call %s did not settle within %s after cancel", method, p.lim.Grace))
			return nil, p.callFailure(method)
		}
	}
}

// queuedReply takes the reply to call id if it is already queued, dropping stale replies before it.
func (p *Process) queuedReply(id int64) (replyMsg, bool) {
	for {
		select {
		case r := <-p.replies:
			if r.ID == id {
				return r, true
			}
			p.logf("dropping a stale reply for call %d", r.ID)
		default:
			return replyMsg{}, false
		}
	}
}

// deadErr returns a KindClosed error when the process cannot take calls. A process the kit is ending for a
// reason of its own (not Close or Kill) is waited for, bounded, so that the error says why it died.
func (p *Process) deadErr(method string) error {
	p.mu.Lock()
	usable, dying := p.st.usable(), !p.st.closing && p.st.fatal == nil
	p.mu.Unlock()
	if usable {
		return nil
	}
	if dying {
		p.awaitExited()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	pe := &ProcessError{Kind: KindClosed, Replica: p.o.Replica, Call: method, ExitCode: -1}
	if f := p.st.fatal; f != nil && f.Kind != KindClosed {
		prev := *f
		pe.Err = fmt.Errorf("it died earlier: %w", &prev)
		p.st.reported = true
	}
	return pe
}

// callFailure returns the process error for a call in flight.
func (p *Process) callFailure(method string) error {
	pe := p.fatalErr()
	pe.Call = method
	return pe
}

// fatalErr waits (bounded) for the process to be gone and returns a copy of its error, marked reported.
func (p *Process) fatalErr() *ProcessError {
	if !p.awaitExited() {
		return &ProcessError{Kind: KindHung, Replica: p.o.Replica, ExitCode: -1,
			Err: fmt.Errorf("process %d did not go away within %s after SIGKILL", p.pid, goneBound)}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	pe := *p.st.fatal
	p.st.reported = true
	return &pe
}

func (p *Process) logf(format string, args ...any) {
	if p.o.Verbose == nil {
		return
	}
	fmt.Fprintf(p.o.Verbose, "harness %s: %s\n", p.o.Replica, fmt.Sprintf(format, args...))
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic("crypto/rand failed: " + err.Error())
	}
	return hex.EncodeToString(b)
}

func lastBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

// NextCallID is the id the next Call will carry (the harness tags the provider's requests to the deployment
// double with it). Calls are serialised, so it is exact when no Call is in progress.
func (p *Process) NextCallID() int64 {
	p.callMu.Lock()
	defer p.callMu.Unlock()
	return p.nextID + 1
}
