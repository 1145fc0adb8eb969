package harness

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
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
type Process struct {
	o      Options
	lim    Limits
	cmd    *exec.Cmd
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

	mu         sync.Mutex
	bg         Observations
	killKind   ErrorKind
	killErr    error
	killStack  string
	protoErr   error // a protocol violation seen by the reader
	fatal      *ProcessError
	reported   bool
	closing    bool
	startTicks uint64 // the process's start time (clock ticks after boot), 0 if unknown
	// sweptAfterExit: the sweep that followed the process's exit left nothing in its group or with its token.
	sweptAfterExit bool
	status         syscall.WaitStatus // how the process ended, once waitDone is closed
	statusKnown    bool
	forkExit       <-chan zygoteExit // the exit of a forked process, reported by its zygote
	sandboxCtx     context.Context
	sandboxEnd     context.CancelFunc

	waitDone  chan struct{} // cmd.Wait returned
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
// *ProcessError: KindStart (python cannot be executed), KindExited or
// KindSignaled (it ended before hello: not a Python 3, a broken install),
// KindHung (no hello within Limits.StartTimeout) or KindProtocol (wrong
// protocol version or cookie).
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
	p.logf("started %s (pid %d)", o.Python, p.pid)

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

func (p *Process) launch(sdk string) error {
	fail := func(err error) error {
		return &ProcessError{Kind: KindStart, Replica: p.o.Replica, ExitCode: -1, Err: err}
	}
	if z := p.o.Zygote; z != nil {
		pp, err := newPipes()
		if err != nil {
			return fail(err)
		}
		pid, exit, err := z.spawn(append(p.environ(), "ASTRABOX_PYCACHE="+pycacheDir(sdk)), p.o.ProjectDir, pp.child())
		if err == nil {
			for _, f := range pp.child() {
				f.Close()
			}
			p.pid, p.forkExit = pid, exit
			p.reqW, p.respR, p.outR, p.errR = pp.reqW, pp.respR, pp.outR, pp.errR
			p.goroutines()
			return nil
		}
		// Same process, slower start: the fork server is an optimisation, never a reason to fail. Fresh pipes,
		// so that a fork that happened after all cannot share them.
		pp.closeAll()
		p.logf("%v; starting an interpreter instead", err)
	}
	pp, err := newPipes()
	if err != nil {
		return fail(err)
	}
	script := filepath.Join(sdk, "astrabox", "_harness", "__main__.py")
	cmd := exec.Command(p.o.Python, "-B", script)
	cmd.Dir = p.o.ProjectDir
	cmd.Stdout = pp.outW
	cmd.Stderr = pp.errW
	cmd.ExtraFiles = []*os.File{pp.reqR, pp.respW}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = time.Second
	cmd.Env = append(p.environ(), "ASTRABOX_PYCACHE="+pycacheDir(sdk))
	if err := cmd.Start(); err != nil {
		pp.closeAll()
		return fail(fmt.Errorf("run %s: %w", p.o.Python, err))
	}
	for _, f := range pp.child() {
		f.Close()
	}
	p.cmd, p.pid = cmd, cmd.Process.Pid
	p.reqW, p.respR, p.outR, p.errR = pp.reqW, pp.respR, pp.outR, pp.errR
	p.goroutines()
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
		if isHarnessVar(kv) {
			continue
		}
		env = append(env, kv)
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
	<-p.exited
	p.mu.Lock()
	defer p.mu.Unlock()
	pe := *p.fatal
	p.reported = true
	if extra != nil && pe.Err == nil {
		pe.Err = extra
	}
	return &pe
}

// Hello returns the harness's hello message.
func (p *Process) Hello() Hello { return p.hello }

// Replica returns the replica name.
func (p *Process) Replica() string { return p.o.Replica }

// PID returns the harness's process id (also its process group id).
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
	return p.killKind == ""
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

	var deadline <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		deadline = t.C
	}
	done := ctx.Done()
	cancelSent := false
	var grace <-chan time.Time
	for {
		select {
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
			deadline, done = nil, nil
			cancelSent, grace = p.sendCancel(id, method, "deadline of "+timeout.String()+" passed")
		case <-done:
			deadline, done = nil, nil
			cancelSent, grace = p.sendCancel(id, method, "context ended: "+ctx.Err().Error())
		case <-grace:
			p.hang(fmt.Errorf("call %s did not settle within %s after cancel", method, p.lim.Grace))
			<-p.exited
			return nil, p.callFailure(method)
		}
	}
}

func (p *Process) sendCancel(id int64, method, why string) (bool, <-chan time.Time) {
	p.logf("call %d %s: %s; sending cancel", id, method, why)
	if err := p.send(cancelMsg{Kind: "cancel", ID: id}, p.lim.Grace); err != nil {
		p.logf("send cancel: %v", err)
	}
	return true, time.After(p.lim.Grace)
}

// finish turns a reply message into a Reply, cutting the output at the
// sync markers.
func (p *Process) finish(r replyMsg, cancelSent bool) *Reply {
	out := &Reply{
		ID: r.ID, OK: r.OK, Value: r.Value, Error: r.Error,
		Duration:     time.Duration(r.DurationNS),
		Observations: r.Observations,
		Coverage:     r.Coverage,
		CancelSent:   cancelSent,
		// Only a cancel this Call sent counts (a stale flag cannot come from elsewhere: one call at a time).
		CancelReceived: cancelSent && r.CancelReceived,
	}
	if r.Markers != nil && !*r.Markers {
		// Nothing was written since the last marker: the segments are what was read so far (empty unless a
		// child process wrote), and there is nothing to wait for.
		now := func() bool { return true }
		out.Stdout, _ = p.stdout.take(r.ID, now)
		out.Stderr, _ = p.stderr.take(r.ID, now)
		return out
	}
	limit := time.Now().Add(markerWait)
	stop := func() bool {
		select {
		case <-p.waitDone:
			return true
		default:
		}
		return time.Now().After(limit)
	}
	wake := time.AfterFunc(markerWait, func() { p.stdout.wake(); p.stderr.wake() })
	defer wake.Stop()
	var okOut, okErr bool
	out.Stdout, okOut = p.stdout.take(r.ID, stop)
	out.Stderr, okErr = p.stderr.take(r.ID, stop)
	if !okOut || !okErr {
		p.logf("call %d: sync marker missing (stdout %v, stderr %v); output cut where it stood", r.ID, okOut, okErr)
	}
	return out
}

// hang dumps the stacks of a harness that does not settle and kills it.
func (p *Process) hang(cause error) {
	if !p.setKill(KindHung, cause) {
		return
	}
	before := p.stderr.bytesSeen()
	p.logf("sending SIGUSR1 for a stack dump")
	_ = syscall.Kill(p.pid, syscall.SIGUSR1)
	// faulthandler writes from the signal handler; wait until stderr has
	// grown and then stayed quiet, at most one second.
	end := time.Now().Add(time.Second)
	last, quiet := before, time.Time{}
	for time.Now().Before(end) {
		time.Sleep(20 * time.Millisecond)
		n := p.stderr.bytesSeen()
		if n != last {
			last, quiet = n, time.Now()
			continue
		}
		if n > before && time.Since(quiet) >= 100*time.Millisecond {
			break
		}
		select {
		case <-p.waitDone:
			end = time.Now()
		default:
		}
	}
	stack, _ := p.stderr.since(before)
	p.mu.Lock()
	p.killStack = strings.TrimSpace(stack)
	p.mu.Unlock()
	killGroup(p.pid, syscall.SIGKILL)
}

// setKill records why we are killing the process; the first reason wins.
// It returns false when a reason was already recorded.
func (p *Process) setKill(kind ErrorKind, err error) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.killKind != "" {
		return false
	}
	select {
	case <-p.waitDone:
		return false
	default:
	}
	p.killKind, p.killErr = kind, err
	return true
}

// abort kills the group at once for reason kind.
func (p *Process) abort(kind ErrorKind, err error) {
	if p.setKill(kind, err) {
		p.logf("killing: %s: %v", kind, err)
	}
	killGroup(p.pid, syscall.SIGKILL)
}

// deadErr returns a KindClosed error when the process cannot take calls.
func (p *Process) deadErr(method string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	dead := p.fatal != nil || p.closing || p.killKind != ""
	if !dead {
		return nil
	}
	pe := &ProcessError{Kind: KindClosed, Replica: p.o.Replica, Call: method, ExitCode: -1}
	if p.fatal != nil && p.fatal.Kind != KindClosed {
		prev := *p.fatal
		pe.Err = fmt.Errorf("it died earlier: %w", &prev)
		p.reported = true
	}
	return pe
}

// callFailure returns the process error for a call in flight.
func (p *Process) callFailure(method string) error {
	<-p.exited
	p.mu.Lock()
	defer p.mu.Unlock()
	pe := *p.fatal
	pe.Call = method
	p.reported = true
	return &pe
}

// send writes one frame to the harness, bounded by d.
func (p *Process) send(v any, d time.Duration) error {
	body, err := json.Marshal(v)
	if err != nil {
		return err
	}
	p.writeMu.Lock()
	defer p.writeMu.Unlock()
	_ = p.reqW.SetWriteDeadline(time.Now().Add(d))
	return WriteFrame(p.reqW, json.RawMessage(body))
}

func (p *Process) drain(f *os.File, s *stream, done chan struct{}) {
	defer p.wg.Done()
	defer close(done)
	buf := make([]byte, 64<<10)
	for {
		n, err := f.Read(buf)
		if n > 0 {
			s.feed(buf[:n])
		}
		if err != nil {
			s.eof()
			return
		}
	}
}

func (p *Process) readLoop() {
	defer p.wg.Done()
	defer close(p.readDone)
	first := true
	for {
		body, err := ReadFrame(p.respR)
		if err != nil {
			p.readFailed(err)
			return
		}
		var env envelope
		if bytes.HasPrefix(body, replyPrefix) {
			env.Kind = "reply" // the harness writes kind first: skip a decoding pass on the hot path
		} else {
			_ = json.Unmarshal(body, &env)
		}
		if first && env.Kind != "hello" {
			p.protocolError(fmt.Errorf("first message is %q, not hello", env.Kind))
			return
		}
		if err := p.dispatch(env.Kind, body, first); err != nil {
			p.protocolError(err)
			return
		}
		first = false
	}
}

// replyPrefix starts every reply the harness writes (its JSON puts kind first).
var replyPrefix = []byte(`{"kind":"reply",`)

func (p *Process) readFailed(err error) {
	if errors.Is(err, os.ErrClosed) {
		return
	}
	if err == io.EOF {
		// The reply channel closed: normal when the process is exiting.
		select {
		case <-p.waitDone:
			return
		case <-time.After(500 * time.Millisecond):
		}
		p.abort(KindProtocol, errors.New("the harness closed its reply channel (descriptor 4) but kept running"))
		return
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		// Cut mid-frame: a crash while writing says more than the cut.
		select {
		case <-p.waitDone:
			return
		case <-time.After(500 * time.Millisecond):
		}
	}
	p.protocolError(err)
}

// protocolError records a broken protocol channel and kills the process. The
// violation is reported even when the process exits by itself meanwhile (it
// usually does: a provider that scribbles on descriptor 4 also breaks the
// harness), since it is the first thing that went wrong.
func (p *Process) protocolError(err error) {
	p.mu.Lock()
	if p.protoErr == nil {
		p.protoErr = err
	}
	p.mu.Unlock()
	p.abort(KindProtocol, err)
}

func (p *Process) dispatch(kind string, body json.RawMessage, first bool) error {
	switch kind {
	case "hello":
		if !first {
			return errors.New("a second hello")
		}
		var h Hello
		if err := json.Unmarshal(body, &h); err != nil {
			return fmt.Errorf("decode hello: %w", err)
		}
		p.helloCh <- h
	case "reply":
		var r replyMsg
		if err := json.Unmarshal(body, &r); err != nil {
			return fmt.Errorf("decode reply: %w", err)
		}
		select {
		case p.replies <- r:
		case <-p.waitDone:
		}
	case "background":
		var b backgroundMsg
		if err := json.Unmarshal(body, &b); err != nil {
			return fmt.Errorf("decode background: %w", err)
		}
		p.mu.Lock()
		p.bg.Merge(b.Observations)
		p.mu.Unlock()
	case "sandbox":
		var r SandboxRequest
		if err := json.Unmarshal(body, &r); err != nil {
			return fmt.Errorf("decode sandbox request: %w", err)
		}
		p.wg.Add(1)
		go p.serveSandbox(r)
	default:
		return fmt.Errorf("unexpected message kind %q", kind)
	}
	return nil
}

func (p *Process) serveSandbox(r SandboxRequest) {
	defer p.wg.Done()
	var resp SandboxResponse
	if p.o.Sandbox == nil {
		resp = SandboxResponse{Error: &SandboxError{Type: "OSError", Message: "no sandbox is attached to this harness"}}
	} else {
		resp = p.o.Sandbox.Sandbox(p.sandboxCtx, r)
	}
	if resp.Error != nil {
		resp.OK = false
	}
	err := p.send(sandboxReplyMsg{Kind: "sandbox_reply", ID: r.ID, OK: resp.OK, Value: resp.Value, Error: resp.Error}, 30*time.Second)
	if err != nil {
		p.logf("send sandbox reply %d: %v", r.ID, err)
	}
}

func (p *Process) waitLoop() {
	defer p.wg.Done()
	var err error
	var ws syscall.WaitStatus
	known := false
	if p.cmd != nil {
		err = p.cmd.Wait()
		if st := p.cmd.ProcessState; st != nil {
			ws, known = st.Sys().(syscall.WaitStatus)
		}
	} else {
		e := <-p.forkExit
		ws, known = e.status, e.known
		if !known {
			err = errors.New("its fork server was gone: exit status unknown")
		}
	}
	p.mu.Lock()
	p.status, p.statusKnown = ws, known
	p.mu.Unlock()
	close(p.waitDone)
	p.sandboxEnd()
	p.logf("exited: %v", err)
	// Orphans left in the group die with the harness.
	killGroup(p.pid, syscall.SIGKILL)
	clean := p.sweep()
	p.mu.Lock()
	p.sweptAfterExit = clean
	p.mu.Unlock()
	// Let the reader deliver a last reply and the drains reach EOF.
	bound := time.After(500 * time.Millisecond)
	for _, ch := range []chan struct{}{p.readDone, p.errDone} {
		select {
		case <-ch:
		case <-bound:
		}
	}
	p.mu.Lock()
	p.fatal = p.fatalLocked()
	p.mu.Unlock()
	close(p.exited)
}

func (p *Process) fatalLocked() *ProcessError {
	pe := &ProcessError{Replica: p.o.Replica, ExitCode: -1, StderrTail: lastBytes(p.stderr.recentTail(), tailForError)}
	signaled := false
	if ws := p.status; p.statusKnown {
		switch {
		case ws.Exited():
			pe.ExitCode = ws.ExitStatus()
		case ws.Signaled():
			signaled = true
			pe.Signal = unix.SignalName(ws.Signal())
			if pe.Signal == "" {
				pe.Signal = ws.Signal().String()
			}
		}
	}
	switch {
	case p.killKind != "":
		pe.Kind, pe.Err, pe.Stack = p.killKind, p.killErr, p.killStack
	case p.protoErr != nil:
		pe.Kind, pe.Err = KindProtocol, p.protoErr
	case signaled:
		pe.Kind = KindSignaled
	default:
		pe.Kind = KindExited
	}
	return pe
}

func (p *Process) pollMemory() {
	defer p.wg.Done()
	t := time.NewTicker(pollEvery)
	defer t.Stop()
	for i := 0; ; i++ {
		select {
		case <-p.stopPoll:
			return
		case <-p.waitDone:
			return
		case <-t.C:
		}
		var rss uint64
		if i%5 == 0 {
			rss = treeRSS(p.pid)
		} else if info, ok := readStat(p.pid); ok {
			rss = uint64(info.rssPages) * uint64(os.Getpagesize())
		}
		if p.lim.MemoryRSS > 0 && rss > p.lim.MemoryRSS {
			p.abort(KindMemoryLimit, fmt.Errorf("resident size %d MiB exceeded the limit of %d MiB", rss>>20, p.lim.MemoryRSS>>20))
			return
		}
	}
}

// sweep kills every process left in the group or carrying the replica token. It reports whether it ended
// with none left.
func (p *Process) sweep() bool {
	p.sweepMu.Lock()
	defer p.sweepMu.Unlock()
	for round := 0; round < 5; round++ {
		pids := strays(p.pid, p.token, p.startTicks)
		if len(pids) == 0 {
			return true
		}
		for _, pid := range pids {
			p.logf("killing stray process %d", pid)
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		killGroup(p.pid, syscall.SIGKILL)
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

// Kill ends the process at once, as when the host is lost: SIGKILL to the
// group, then a sweep for stray descendants. Calls in flight and later calls
// fail with KindClosed. Safe to call more than once, and after Close.
func (p *Process) Kill() {
	p.closeOnce.Do(func() { p.closeErr = p.shutdown(false) })
}

// Close shuts the harness down gracefully: shutdown, then after
// Limits.CloseTimeout SIGTERM to the group, after Limits.Grace SIGKILL, then a
// sweep of stray descendants (processes whose environment carries the replica
// token). It returns a KindHung *ProcessError when the harness had to be
// forced, the unreported error of a process that died by itself, else nil.
// Safe to call more than once; later calls return the first result.
func (p *Process) Close() error {
	p.closeOnce.Do(func() { p.closeErr = p.shutdown(true) })
	return p.closeErr
}

func (p *Process) shutdown(graceful bool) error {
	p.mu.Lock()
	p.closing = true
	p.mu.Unlock()
	var result error
	select {
	case <-p.waitDone:
	default:
		p.setKill(KindClosed, errors.New("closed by the host"))
		if graceful {
			result = p.gracefulStop()
		} else {
			p.logf("kill")
			killGroup(p.pid, syscall.SIGKILL)
		}
	}
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		p.logf("process %d did not go away after SIGKILL", p.pid)
	}
	p.mu.Lock()
	clean := p.sweptAfterExit
	p.mu.Unlock()
	if !clean { // the sweep after the exit found nothing left: nothing can have appeared since
		p.sweep()
	}
	close(p.stopPoll)
	p.reqW.Close()
	// Drains end at EOF unless something we could not kill holds the pipe.
	bound := time.After(200 * time.Millisecond)
	for _, ch := range []chan struct{}{p.outDone, p.errDone, p.readDone} {
		select {
		case <-ch:
		case <-bound:
		}
	}
	p.outR.Close()
	p.errR.Close()
	p.respR.Close()
	p.wg.Wait()
	if result == nil && graceful {
		p.mu.Lock()
		if p.fatal != nil && !p.reported && p.fatal.Kind != KindClosed {
			pe := *p.fatal
			p.reported = true
			result = &pe
		}
		p.mu.Unlock()
	}
	return result
}

func (p *Process) gracefulStop() error {
	p.logf("shutdown")
	if err := p.send(shutdownMsg{Kind: "shutdown"}, p.lim.CloseTimeout); err != nil {
		p.logf("send shutdown: %v", err)
	}
	select {
	case <-p.waitDone:
		return nil
	case <-time.After(p.lim.CloseTimeout):
	}
	p.logf("no exit %s after shutdown; SIGTERM", p.lim.CloseTimeout)
	killGroup(p.pid, syscall.SIGTERM)
	how := "SIGTERM"
	select {
	case <-p.waitDone:
	case <-time.After(p.lim.Grace):
		p.logf("no exit %s after SIGTERM; SIGKILL", p.lim.Grace)
		killGroup(p.pid, syscall.SIGKILL)
		how = "SIGKILL"
		<-p.exited
	}
	<-p.exited
	p.mu.Lock()
	defer p.mu.Unlock()
	pe := *p.fatal
	pe.Kind = KindHung
	pe.Err = fmt.Errorf("the harness did not exit within %s after shutdown and was stopped with %s", p.lim.CloseTimeout, how)
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
