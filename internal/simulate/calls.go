package simulate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/astrabox-dev/astrabox/internal/double"
	"github.com/astrabox-dev/astrabox/internal/harness"
	"github.com/astrabox-dev/astrabox/internal/seconds"
)

// callSpec is one callback the platform is about to make.
type callSpec struct {
	method   string
	args     map[string]any // as sent, but with "deadline" fields filled in at call time
	ctx      CallContext
	deadline float64 // seconds of wall time
	fault    *Fault
	holds    bool // the step holds double requests (host loss waits for one)
	// onRun runs while the callback is in flight (the supersede fault).
	onRun func()
}

// BeforeApplyMark, when set, runs once a callback's reply (or failure) is in, before the platform counts the
// double's applied writes for it (CallRecord.ApplyMark), with a function that returns the requests the double
// has received so far (each says whether it has been answered). Tests set it to let the writes of work a
// callback left running land before the mark, as they do on a loaded machine when the reply is slow to come,
// without a timed wait: they wait until the write they expect has arrived and been answered (a write its
// worker has not sent yet is not among the requests received); it is never set outside tests.
var BeforeApplyMark func(requests func() []double.Request)

// call runs a callback on a replica, enforcing its deadline and faults, and records it in the history.
// It never fails: what went wrong is in the record's Outcome.
func (p *platform) call(r *replica, cs callSpec) *CallRecord {
	if err := checkArgs(Callback(cs.method), cs.args); err != nil {
		// The platform's own argument builders and their typed records disagree: a bug of the kit, which
		// must not produce a history its checks would misread.
		panic(fmt.Sprintf("simulate: the arguments the platform built do not match their typed record: %v", err))
	}
	rec := &CallRecord{Replica: r.name, Method: Callback(cs.method), Ctx: cs.ctx, DeadlineS: cs.deadline, Args: recordArgs(cs.args)}
	if cs.fault != nil {
		rec.Fault = cs.fault.Kind
	}
	if p.o.Target == "" {
		// EP-NONE: no provider, every point takes its default.
		rec.Key = fmt.Sprintf("%s#-", r.name)
		rec.Outcome = OutcomeReturned
		rec.Result = defaultResult(cs.method)
		p.event(&Event{Kind: EventCall, Replica: r.name, Call: rec, Message: cs.method + " (no provider: default)"})
		return rec
	}
	if !p.ensureStarted(r, rec, cs.method) {
		return rec
	}
	p.callSeq[r.name]++
	rec.Key = fmt.Sprintf("%s#%d", r.name, p.callSeq[r.name])
	timeout := cs.timeout()
	sendArgs := p.sendArgs(r, cs)
	p.dbl.SetInFlight(r.name, double.Call{Callback: cs.method, CallID: rec.Key, Step: fmt.Sprintf("%d:%s", p.step, p.stepOp)})
	p.mu.Lock()
	p.current[r.name] = rec
	p.mu.Unlock()

	hid, pid := r.proc.NextCallID(), r.proc.PID()
	p.mu.Lock()
	p.callTags[fmt.Sprintf("%s|%d:%d", r.name, pid, hid)] = rec.Key
	p.mu.Unlock()
	done := make(chan callResult, 1)
	var holdWrite double.FaultID
	if cs.fault != nil && cs.fault.Kind == FaultCancel && cs.fault.On == CancelOnWrite {
		holdWrite = p.dbl.AddFault(double.Fault{Kind: double.Hold, Replica: r.name, WritesOnly: true, Times: 1})
	}
	heldBefore := p.dbl.Held()
	requestsBefore := p.dbl.RequestCount()
	callCtx, cancelNow := context.WithCancel(p.ctx)
	defer cancelNow()
	start := time.Now()
	go func() {
		rep, err := r.proc.Call(callCtx, cs.method, sendArgs, timeout)
		done <- callResult{rep, err}
	}()
	if cs.onRun != nil {
		cs.onRun()
	}
	var res callResult
	onRequest, releaseHeld := false, false
	hostLoss := cs.fault != nil && cs.fault.Kind == FaultHostLoss
	switch {
	case hostLoss:
		res = p.hostLossDuring(r, cs, done, heldBefore)
	case cs.fault != nil && cs.fault.Kind == FaultCancel && cs.fault.On == CancelOnRequest:
		res, onRequest = p.cancelOnRequest(done, requestsBefore, timeout, cancelNow)
	case cs.fault != nil && cs.fault.Kind == FaultCancel && cs.fault.On == CancelOnWrite:
		res, onRequest, releaseHeld = p.cancelOnWrite(r, done, holdWrite, heldBefore, timeout, cancelNow)
	default:
		res = <-done
	}
	rec.DurationNS = int64(time.Since(start))
	p.dbl.ClearInFlight(r.name)
	if BeforeApplyMark != nil {
		BeforeApplyMark(p.dbl.Requests)
	}
	rec.ApplyMark = p.dbl.AppliedCount()
	if releaseHeld {
		// The write the cancel met is let through only now: it lands after the callback settled.
		p.dbl.Release(holdWrite)
	}
	p.mu.Lock()
	delete(p.current, r.name)
	p.mu.Unlock()

	recordResult(rec, res, callFacts{HostLoss: hostLoss, OnRequest: onRequest, ProcessFailed: res.err != nil})
	p.materials.internFiles(rec.Result)
	p.noteHang(rec)
	p.takeConns(r.name, pid, &rec.Observations)
	if res.reply != nil && res.reply.Exit != nil {
		p.endedHost(r, rec, res.reply.Exit)
	}
	p.stableAddrs(rec)
	p.event(&Event{Kind: EventCall, Replica: r.name, Call: rec, Message: describeCall(rec)})
	bg := r.proc.Background()
	p.takeConns(r.name, pid, &bg)
	if !bg.Empty() {
		bgc := bg
		p.stableObservations(&bgc)
		p.event(&Event{Kind: EventBackground, Replica: r.name, Message: "observations from work left behind", Background: &bgc})
	}
	p.settleAfter(r, rec, hid)
	return rec
}

// sendArgs are the callback's arguments as sent: with its wall-clock deadline, and the replica's URL of the
// double in place of ${ASTRABOX_DOUBLE_URL}.
func (p *platform) sendArgs(r *replica, cs callSpec) map[string]any {
	wallDeadline := float64(time.Now().Add(time.Duration(cs.deadline*float64(time.Second))).UnixNano()) / 1e9
	sendArgs := withDeadline(cs.args, wallDeadline)
	if url, err := p.dbl.URL(r.name); err == nil {
		sendArgs = substituteArgs(sendArgs, url)
	}
	return sendArgs
}

// recordResult records what the harness answered (or how the call failed) and the outcome classifyOutcome
// gives it; facts carry what the platform knew before the answer.
func recordResult(rec *CallRecord, res callResult, facts callFacts) {
	var decodeErr error
	if rep := res.reply; rep != nil {
		rec.Observations = rep.Observations
		rec.Coverage = rep.Coverage
		rec.Stdout = rep.Stdout.String()
		rec.Stderr = rep.Stderr.String()
		rec.CancelSent = rep.CancelSent
		rec.Waited = rep.WaitedUnits
		facts.Replied, facts.OK = true, rep.OK
		facts.CancelSent, facts.CancelReceived = rep.CancelSent, rep.CancelReceived
		facts.HeldPastDeadline = rep.HeldPastDeadline
		facts.ErrorCancelled = rep.Error != nil && rep.Error.Cancelled
		if rep.OK {
			v, err := rep.Result()
			if err != nil {
				// The harness's own value did not decode: a protocol breach of the kit, never the provider's.
				decodeErr = fmt.Errorf("%s (call %s): %w", rec.Method, rec.Key, err)
				facts.ProcessFailed = true
			}
			rec.Result = v
		} else {
			rec.Error = rep.Error
		}
	}
	rec.Outcome = classifyOutcome(facts)
	if decodeErr != nil {
		rec.ProcessKind = string(harness.KindProtocol)
		rec.ProcessError = decodeErr.Error()
		return
	}
	var pe *harness.ProcessError
	if res.err != nil && rec.Outcome == OutcomeDied && errors.As(res.err, &pe) {
		rec.ProcessKind = string(pe.Kind)
		rec.MemoryRSS, rec.MemoryLimit = pe.ResidentBytes, pe.MemoryLimitBytes
	}
	if res.err != nil {
		rec.ProcessError = res.err.Error()
	}
}

// ensureStarted starts the replica's process if it is not running (a restart after a host loss is told in the
// timeline); when it cannot start, rec records the call as died and ensureStarted returns false.
func (p *platform) ensureStarted(r *replica, rec *CallRecord, method string) bool {
	if r.proc != nil && r.proc.Alive() {
		return true
	}
	restart := r.proc != nil
	if err := p.startReplica(r); err != nil {
		rec.Key = r.name + "#start"
		rec.Outcome = OutcomeDied
		rec.ProcessError = err.Error()
		p.event(&Event{Kind: EventCall, Replica: r.name, Call: rec, Message: method + " could not run: " + err.Error()})
		return false
	}
	if restart {
		p.event(&Event{Kind: EventPlatform, Replica: r.name, Message: "replica " + r.name + " restarted and loaded the provider"})
	}
	p.started(r)
	return true
}

// timeout is how long the harness lets the callback run: its deadline, or the after of a timeout or cancel
// fault (default 0.05 s).
func (cs callSpec) timeout() time.Duration {
	if cs.fault != nil && (cs.fault.Kind == FaultTimeout || cs.fault.Kind == FaultCancel) {
		after := cs.fault.After
		if after <= 0 {
			after = 0.05
		}
		return seconds.Duration(after)
	}
	return seconds.Duration(cs.deadline)
}

// callFacts are what the platform knows of a callback when it ends, for classifyOutcome.
type callFacts struct {
	// HostLoss: the step's host_loss fault killed the replica during the call.
	HostLoss bool
	// Replied: the harness answered; OK, the callback returned (else it raised).
	Replied, OK bool
	// CancelSent: the platform cancelled the callback; CancelReceived: the cancel met it still running.
	CancelSent, CancelReceived bool
	// HeldPastDeadline: the harness saw the callback hold its event loop through its deadline (a synchronous
	// stretch that began before the deadline and ended after it), so the cancel could not reach it.
	HeldPastDeadline bool
	// ErrorCancelled: the raised error is the callback's own cancellation.
	ErrorCancelled bool
	// OnRequest: the cancel came at a request's arrival at the double (cancel on: request), not a deadline.
	OnRequest bool
	// ProcessFailed: the call ended with a process error (the replica died, or its pipes broke).
	ProcessFailed bool
}

// classifyOutcome is the outcome of a callback from what the platform knows when it ends. A cancelled
// callback that returned or raised anyway overran its cancel, unless the reply crossed the cancel. Whether it
// crossed is decided from facts of the harness's event loop, never from durations that machine load
// stretches: the cancel met the callback still running (it was delivered and the callback went on), or the
// callback held the loop through its deadline (synchronous work, which no cancel can interrupt), is an
// overrun; a cancel that found the callback done, with the loop free at the deadline, came too late, which is
// the kit's delivery and not the provider's fault.
func classifyOutcome(f callFacts) Outcome {
	var out Outcome
	if f.HostLoss {
		out = OutcomeHostLoss
	}
	if f.Replied {
		crossed := f.CancelSent && !f.CancelReceived && (f.OnRequest || !f.HeldPastDeadline)
		switch {
		case f.OK && f.CancelSent && !crossed:
			out = OutcomeOverran
		case f.OK:
			out = OutcomeReturned
		case f.CancelSent && f.ErrorCancelled:
			out = OutcomeCancelled
		case f.CancelSent && !crossed:
			out = OutcomeOverran
		default:
			out = OutcomeRaised
		}
	}
	if f.ProcessFailed && out != OutcomeHostLoss {
		out = OutcomeDied
	}
	return out
}

// endedHost records a callback whose SystemExit or KeyboardInterrupt ended its replica process, as it ends
// the platform's asyncio host: the call did not settle (its replica died), with the exception kept for its
// source line. The next callback on that replica starts a new process.
func (p *platform) endedHost(r *replica, rec *CallRecord, exit *harness.ExitInfo) {
	r.proc.WaitExit(2 * time.Second)
	rec.Outcome = OutcomeDied
	if exit.Signal != "" {
		rec.ProcessKind = string(harness.KindSignaled)
		rec.ProcessError = fmt.Sprintf("%s raised %s, which ends the host process: replica %s died by %s", rec.Method, exit.Exception, r.name, exit.Signal)
		return
	}
	rec.ProcessKind = string(harness.KindExited)
	rec.ProcessError = fmt.Sprintf("%s raised %s, which ends the host process: replica %s exited with status %d", rec.Method, exit.Exception, r.name, exit.Code)
}

type callResult struct {
	reply *harness.Reply
	err   error
}

// cancelOnRequest cancels the callback as soon as one more request reaches the double than before the call
// (the request is then in flight, slowed down by the step's delay fault), or lets the call's own deadline send
// the cancel if no request comes first. triggered reports a cancel sent on a request's arrival.
func (p *platform) cancelOnRequest(done chan callResult, requestsBefore int, timeout time.Duration, cancelNow context.CancelFunc) (res callResult, triggered bool) {
	ctx, stop := context.WithTimeout(p.ctx, timeout)
	defer stop()
	arrived := make(chan error, 1)
	go func() { arrived <- p.dbl.WaitRequests(ctx, requestsBefore+1) }()
	select {
	case res := <-done:
		return res, false
	case err := <-arrived:
		if err != nil {
			return <-done, false
		}
	}
	cancelNow()
	return <-done, true
}

// After a cancel on write, the held write is let through as soon as the callback is seen waiting: every
// thread of its replica's process asleep (harness.Process.Asleep) in asleepSamples polls in a row,
// asleepPoll apart. A callback that waits for its write (shielded, or joined in its cancellation handler)
// can only answer once the write is answered, and then sleeps; one that abandons its write answers without
// sleeping, however loaded the machine (a thread waiting for a CPU is runnable, not asleep), and its write is
// released only after its answer, so that it lands after the callback settled in every run. Where thread
// states cannot be read, or a callback never sleeps, the write is let through after cancelGraceShare of the
// replica's grace after a cancel (harness.Limits.Grace), leaving it the rest to finish.
const (
	asleepPoll       = 10 * time.Millisecond
	asleepSamples    = 3
	cancelGraceShare = 2
)

// cancelOnWrite cancels the callback when its first write is held (by the hold fault id, added before the
// call) and keeps the write held until the callback answers or is seen waiting. When the callback answered
// first, release is true: the caller lets the write through after it took the call's apply mark. With no
// write within timeout the callback is cancelled then, like any cancel fault.
func (p *platform) cancelOnWrite(r *replica, done chan callResult, id double.FaultID, heldBefore int, timeout time.Duration, cancelNow context.CancelFunc) (res callResult, triggered, release bool) {
	defer p.dbl.RemoveFault(id)
	ctx, stop := context.WithTimeout(p.ctx, timeout)
	defer stop()
	held := make(chan error, 1)
	go func() { held <- p.dbl.WaitHeld(ctx, heldBefore+1) }()
	select {
	case res := <-done:
		// Settled before it wrote: a write it made on the way out is held still, and goes on now.
		return res, false, true
	case err := <-held:
		if err != nil {
			// No write within the fault's time: the harness cancels the callback at that deadline.
			p.dbl.RemoveFault(id)
			return <-done, false, true
		}
	}
	cancelNow()
	backstop := time.NewTimer(p.o.Limits.WithDefaults().Grace / cancelGraceShare)
	defer backstop.Stop()
	tick := time.NewTicker(asleepPoll)
	defer tick.Stop()
	for asleep := 0; asleep < asleepSamples; {
		select {
		case res = <-done:
			return res, true, true
		case <-backstop.C:
			asleep = asleepSamples
		case <-tick.C:
			if ok, known := r.proc.Asleep(); ok && known {
				asleep++
			} else {
				asleep = 0
			}
		}
	}
	p.dbl.Release(id)
	return <-done, true, false
}

// hostLossDuring kills the replica while its callback runs: once the double holds one more request than before
// the call (when the step holds any), or after the fault's delay.
func (p *platform) hostLossDuring(r *replica, cs callSpec, done chan callResult, heldBefore int) callResult {
	wait := cs.fault.After
	if wait <= 0 {
		wait = 0.05
	}
	ctx, cancel := context.WithTimeout(p.ctx, seconds.Duration(cs.deadline))
	defer cancel()
	if cs.holds {
		held := make(chan error, 1)
		go func() { held <- p.dbl.WaitHeld(ctx, heldBefore+1) }()
		select {
		case res := <-done:
			return res
		case <-held:
		}
	} else {
		select {
		case res := <-done:
			return res
		case <-time.After(time.Duration(wait * float64(time.Second))):
		}
	}
	r.proc.Kill()
	p.event(&Event{Kind: EventPlatform, Replica: r.name, Message: "host loss: replica " + r.name + " killed while " + cs.method + " ran"})
	return <-done
}

func describeCall(c *CallRecord) string {
	m := string(c.Method)
	switch c.Outcome {
	case OutcomeReturned:
		if c.Result != nil {
			return fmt.Sprintf("%s returned %s", m, c.Result.Type)
		}
		return m + " returned"
	case OutcomeRaised:
		if c.Error != nil {
			return fmt.Sprintf("%s raised %s", m, c.Error.Type)
		}
		return m + " raised"
	case OutcomeCancelled:
		return m + " was cancelled at its deadline"
	case OutcomeOverran:
		return m + " ignored cancellation at its deadline"
	case OutcomeHostLoss:
		return m + " lost with its host"
	default:
		return m + " did not settle: " + c.ProcessKind
	}
}

func defaultResult(method string) *harness.Result {
	switch method {
	case "plan":
		return &harness.Result{Type: KindPlan, Declaration: json.RawMessage("{}")}
	case "prepare_session", "prepare_turn":
		return &harness.Result{Type: KindMaterials, TurnValiditySeconds: json.RawMessage("null")}
	case "read_user_actions":
		return &harness.Result{Type: KindUserActionState, Ready: true}
	case "recover":
		return &harness.Result{Type: KindBool, Value: false}
	default:
		return &harness.Result{Type: KindNone}
	}
}

// withDeadline fills the "deadline" fields of contexts with the wall-clock deadline.
func withDeadline(args map[string]any, deadline float64) map[string]any {
	out := CopyMap(args)
	for _, k := range []string{"context", "operation"} {
		if c, ok := out[k].(map[string]any); ok {
			if _, has := c["deadline"]; has {
				c["deadline"] = deadline
			}
			if op, ok := c["operation"].(map[string]any); ok {
				if _, has := op["deadline"]; has {
					op["deadline"] = deadline
				}
			}
		}
	}
	return out
}

func substituteArgs(args map[string]any, url string) map[string]any {
	return substitute(args, url).(map[string]any)
}

// recordArgs is the arguments as kept in the history: deadlines relative, configuration unsubstituted.
func recordArgs(args map[string]any) map[string]any {
	return CopyMap(args)
}

// replicaSandbox answers one replica's SandboxHandle calls, attributing each to the call whose code made it.
type replicaSandbox struct {
	p *platform
	r *replica
}

// Sandbox serves a request of the replica's process (harness.SandboxServer). The harness names the call
// whose code made the request (work a call left running included); without that, the call in flight on the
// replica.
func (s replicaSandbox) Sandbox(_ context.Context, req harness.SandboxRequest) harness.SandboxResponse {
	p := s.p
	p.mu.Lock()
	key := ""
	if proc := s.r.proc; proc != nil && req.Call > 0 {
		key = p.callTags[fmt.Sprintf("%s|%d:%d", s.r.name, proc.PID(), req.Call)]
	}
	if c := p.current[s.r.name]; key == "" && c != nil {
		key = c.Key
	}
	p.mu.Unlock()
	return p.serveSandbox(req, key)
}

// serveSandbox serves one SandboxHandle call from the fake sandboxes, recorded as made by call callKey.
func (p *platform) serveSandbox(req harness.SandboxRequest, callKey string) harness.SandboxResponse {
	p.mu.Lock()
	sb := p.sandboxes[req.SandboxID]
	p.mu.Unlock()
	op := &SandboxOp{Call: callKey, SandboxID: req.SandboxID, Op: req.Op, Path: req.Path}
	resp := harness.SandboxResponse{OK: true}
	fail := func(err error) {
		var se *SandboxError
		if errors.As(err, &se) {
			resp = harness.SandboxResponse{Error: &harness.SandboxError{Type: se.Type, Message: se.Error()}}
		} else {
			resp = harness.SandboxResponse{Error: &harness.SandboxError{Type: "OSError", Message: err.Error()}}
		}
		op.Error = resp.Error.Type
	}
	if sb == nil {
		fail(&SandboxError{Type: "OSError", Path: req.Path, Msg: "sandbox " + req.SandboxID + " no longer exists"})
	} else {
		switch req.Op {
		case harness.OpReadFile:
			if b, err := sb.Read(req.Path); err != nil {
				fail(err)
			} else {
				resp.Value = harness.ReadFileValue(b)
				op.Size = len(b)
			}
		case harness.OpWriteFile:
			mode := 0o600
			if req.Mode != nil {
				mode = *req.Mode
			}
			op.Mode = mode
			op.Size = len(req.Content)
			op.content = append([]byte(nil), req.Content...)
			if err := sb.Write(req.Path, req.Content, uint32(mode)); err != nil {
				fail(err)
			}
		case harness.OpExists:
			resp.Value = sb.Exists(req.Path)
		case harness.OpListDir:
			if names, err := sb.List(req.Path); err != nil {
				fail(err)
			} else {
				resp.Value = names
			}
		case harness.OpRemove:
			if err := sb.Remove(req.Path); err != nil {
				fail(err)
			}
		default:
			fail(fmt.Errorf("unknown sandbox operation %q", req.Op))
		}
	}
	msg := fmt.Sprintf("sandbox %s %s %s", req.SandboxID, req.Op, req.Path)
	if op.Error != "" {
		msg += " -> " + op.Error
	}
	p.event(&Event{Kind: EventSandbox, Sandbox: op, Message: msg})
	return resp
}

// stableAddrs replaces the double's loopback addresses, whose ports change from run to run, with placeholders
// in everything a call record keeps as text, so that the same scenario and seed give the same history.
func (p *platform) stableAddrs(rec *CallRecord) {
	p.stableObservations(&rec.Observations)
	rec.Stdout = p.stableText(rec.Stdout)
	rec.Stderr = p.stableText(rec.Stderr)
	rec.ProcessError = p.stableText(rec.ProcessError)
	if rec.Error != nil {
		e := *rec.Error
		e.Message, e.Repr, e.Traceback = p.stableText(e.Message), p.stableText(e.Repr), p.stableText(e.Traceback)
		rec.Error = &e
	}
	if rec.Result != nil {
		rec.Result.Repr = p.stableText(rec.Result.Repr)
	}
}

func (p *platform) stableObservations(o *harness.Observations) {
	for i := range o.Audit {
		o.Audit[i].Summary = p.stableText(o.Audit[i].Summary)
	}
	for i := range o.Logs {
		o.Logs[i].Message = p.stableText(o.Logs[i].Message)
		if o.Logs[i].ExcText != nil {
			t := p.stableText(*o.Logs[i].ExcText)
			o.Logs[i].ExcText = &t
		}
	}
	for i := range o.Warnings {
		o.Warnings[i].Message = p.stableText(o.Warnings[i].Message)
	}
}

// stableText writes the double's per-replica base URL as ${ASTRABOX_DOUBLE_URL} and its bare address as
// ${ASTRABOX_DOUBLE_ADDR}.
func (p *platform) stableText(s string) string {
	if s == "" || p.o.Target == "" {
		return s
	}
	for _, r := range p.replicas {
		url, err := p.dbl.URL(r.name)
		if err != nil {
			continue
		}
		s = strings.ReplaceAll(s, url, "${"+double.EnvURL+"}")
		s = strings.ReplaceAll(s, strings.TrimPrefix(url, "http://"), "${ASTRABOX_DOUBLE_ADDR}")
	}
	return s
}
