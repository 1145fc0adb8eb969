package harness

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// The protocol client: frames to and from the harness, the hello, replies, background observations and
// sandbox requests (docs/protocol.md).

// send writes one frame to the harness, bounded by d.
func (p *Process) send(v any, d time.Duration) error {
	frame, err := encodeFrame(v) // header and body in one buffer, a call's by the hand-written encoder
	if err != nil {
		return err
	}
	p.writeMu.Lock()
	defer p.writeMu.Unlock()
	_ = p.reqW.SetWriteDeadline(time.Now().Add(d))
	if _, err := p.reqW.Write(frame); err != nil {
		return fmt.Errorf("write frame: %w", err)
	}
	return nil
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
	// Buffered: a frame's length and body, and the frames the harness writes together, come in one read.
	r := bufio.NewReaderSize(p.respR, 64<<10)
	for {
		body, err := readBody(r)
		if err != nil {
			p.readFailed(err)
			return
		}
		var env envelope
		if bytes.HasPrefix(body, replyPrefix) {
			// The harness writes kind first: skip a decoding pass on the hot path, and the check that the body
			// is JSON (decodeReply checks every byte it takes, and json.Unmarshal the whole body otherwise).
			env.Kind = "reply"
		} else if !isJSONObject(body) {
			p.readFailed(fmt.Errorf("frame of %d bytes is not a JSON object: %q", len(body), preview(body)))
			return
		} else if err := json.Unmarshal(body, &env); err != nil {
			p.protocolError(fmt.Errorf("a harness message is not a JSON object with a kind: %w", err))
			return
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
	if p.st.protoErr == nil {
		p.st.protoErr = err
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
		if BeforeReply != nil {
			BeforeReply()
		}
		if sawReply != nil {
			sawReply(body)
		}
		var r replyMsg
		if err := decodeReply(body, &r); err != nil {
			return fmt.Errorf("decode reply: %w", err)
		}
		// A reply read before the process ended is delivered even when the exit is already known (a callback's
		// SystemExit replies, then ends the process): only a full queue with nobody left to read it drops one.
		select {
		case p.replies <- r:
		default:
			select {
			case p.replies <- r:
			case <-p.waitDone:
			}
		}
	case "returned":
		var m returnedMsg
		if err := json.Unmarshal(body, &m); err != nil {
			return fmt.Errorf("decode returned: %w", err)
		}
		select {
		case p.returned <- m.ID:
		default: // nobody waits for stale ids: drop the oldest
			select {
			case <-p.returned:
			default:
			}
			p.returned <- m.ID
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

// BeforeReply, when set, runs in the reader before each reply is decoded. Tests set it to hold a reply back
// as a loaded machine does when the kit is slow to read and decode a large material; never set outside tests.
var BeforeReply func()

// sawReply, when set, is given each reply frame's body before it is decoded (tests: the replies a real harness
// writes take the hand-written decoder).
var sawReply func(body []byte)

// BeforeCancel, when set, runs before each cancel is sent, with a function that tells whether a reply has
// already been read from the harness. Tests set it to hold the cancel back as a loaded machine does (Go's
// timer fires late, or the pipe is slow) until the reply is here, so that a reply crossing its cancel is
// reproduced without load and without a timed wait; it is never set outside tests.
var BeforeCancel func(replied func() bool)

func (p *Process) sendCancel(id int64, method, why string) (bool, <-chan time.Time) {
	if BeforeCancel != nil {
		BeforeCancel(func() bool { return len(p.replies) > 0 })
	}
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
		CancelReceived:   cancelSent && r.CancelReceived,
		HeldPastDeadline: r.HeldPastDeadline,
		WaitedUnits:      r.WaitedUnits,
		Exit:             r.Exit,
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
