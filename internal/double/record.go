package double

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/astrabox-dev/astrabox/internal/conntag"
)

// OperationHeader is the request header that names the operation a write belongs to, so that a fence on
// that operation can refuse it.
const OperationHeader = "X-Astrabox-Operation"

// Call identifies the callback a replica has in flight.
type Call struct {
	// Callback is the callback name, for example "prepare".
	Callback string
	// CallID identifies this invocation.
	CallID string
	// Step is the scenario step label.
	Step string
}

// Request is one recorded request. Requests are numbered in arrival order.
type Request struct {
	// Seq is the arrival sequence number, starting at 1.
	Seq int64
	// Arrival is the time given by Options.Clock when the request arrived.
	Arrival time.Time
	// Replica is the replica whose listener received the request.
	Replica string
	// Call is the callback that replica had in flight at arrival; nil means background work.
	Call *Call
	// Method and Path are the request method and decoded URL path.
	Method string
	Path   string
	// Query is the raw URL query.
	Query string
	// Header holds the request headers as received, secrets included: mask before printing.
	Header http.Header
	// Body is the request body as received (up to Options.MaxBody).
	Body []byte
	// Conn names the provider's connection the request came over: the replica listener's own, or, for a
	// request the egress proxy forwarded, the provider's connection to the proxy (its conntag.Header). The
	// platform matches it to the harness's connection records to attribute requests without a call header.
	Conn conntag.Ref
	// Operation is the value of the X-Astrabox-Operation header (or of the service's operation header), if any.
	Operation string
	// Service names the declared service the request was for ("" = the double's own endpoints), and Host the
	// production host:port the provider addressed.
	Service string
	Host    string
	// Answer is the body a service's stand-in answered with (service requests only, up to MaxBody), so that
	// secrets a service hands out are hunted like the double's own credentials.
	Answer []byte
	// Status is the status answered; 0 while the request is pending or when the connection was dropped.
	Status int
	// Done reports that the handler finished (answered or dropped).
	Done bool
	// Write reports that the request counts as a write: PUT, POST or DELETE at the double's own endpoints;
	// for a declared service, as its stand-in classifies it (Upstream.IsWrite: every method but GET, HEAD
	// and OPTIONS, less the service's reads). Faults that act on writes only (Fault.WritesOnly) count these.
	Write bool
	// Applied reports that a write was executed and changed (or idempotently kept) the state: a 2xx answer
	// to PUT, POST or DELETE. Reads are never applied.
	Applied bool
	// ApplyOrder numbers applied writes in the order they were applied (1, 2, ...); 0 if not applied. It can
	// differ from Seq order when requests were held or delayed.
	ApplyOrder int64
	// Fenced reports that the write was refused with 409 because its operation was fenced.
	Fenced bool
	// Held, Delayed, Unavailable and Dropped report which faults acted on the request.
	Held        bool
	Delayed     bool
	Unavailable bool
	Dropped     bool
	// Forbidden reports a call to an endpoint a provider must never call (consent flows, agents, dispatch).
	Forbidden bool
	// Faults lists the faults that matched the request, in the order they were added.
	Faults []FaultID
}

// Describe names the request without its headers or body (which may hold secrets): the service it was for
// (or the double's own endpoints), its method and path, the replica, and the callback that sent it.
func (r *Request) Describe() string {
	target := "the double's"
	if r.Service != "" {
		target = "service " + r.Service + "'s"
	}
	who := "background work"
	if r.Call != nil {
		who = r.Call.Callback
		if r.Call.Step != "" {
			who += " (step " + r.Call.Step + ")"
		}
	}
	return fmt.Sprintf("%s %s %s, sent by replica %s during %s", target, r.Method, r.Path, r.Replica, who)
}

func (r *Request) clone() Request {
	c := *r
	if r.Call != nil {
		call := *r.Call
		c.Call = &call
	}
	c.Header = r.Header.Clone()
	c.Body = slices.Clone(r.Body)
	c.Answer = slices.Clone(r.Answer)
	c.Faults = slices.Clone(r.Faults)
	return c
}

// SetInFlight records that replica is now running call: requests from that replica arriving from now on are
// attributed to it until [Double.ClearInFlight] or the next SetInFlight.
func (d *Double) SetInFlight(replica string, call Call) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.inFlight[replica] = call
	d.hasFlight[replica] = true
}

// ClearInFlight records that replica has no callback in flight: its later requests are background work.
func (d *Double) ClearInFlight(replica string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.inFlight, replica)
	delete(d.hasFlight, replica)
}

// InFlight returns the call replica has in flight, if any.
func (d *Double) InFlight(replica string) (Call, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	c, ok := d.inFlight[replica]
	return c, ok && d.hasFlight[replica]
}

// Requests returns a copy of every recorded request in arrival order, including pending ones.
func (d *Double) Requests() []Request {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]Request, len(d.requests))
	for i, r := range d.requests {
		out[i] = r.clone()
	}
	return out
}

// RequestCount returns how many requests have been recorded since the last reset.
func (d *Double) RequestCount() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.requests)
}

// ForbiddenCalls returns a copy of the recorded requests to endpoints a provider must never call, in
// arrival order.
func (d *Double) ForbiddenCalls() []Request {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []Request
	for _, r := range d.requests {
		if r.Forbidden {
			out = append(out, r.clone())
		}
	}
	return out
}

// arrive records a new request and returns it with the faults that match it. The clock is read outside mu.
func (d *Double) arrive(replica string, r *http.Request, pre *preread) (*Request, []*faultState) {
	d.arrivalMu.Lock()
	defer d.arrivalMu.Unlock()
	now := d.clock()
	d.mu.Lock()
	defer d.mu.Unlock()
	d.seq++
	req := &Request{
		Seq:       d.seq,
		Arrival:   now,
		Replica:   replica,
		Method:    r.Method,
		Path:      r.URL.Path,
		Query:     r.URL.RawQuery,
		Header:    r.Header.Clone(),
		Operation: r.Header.Get(OperationHeader),
		Write:     isWrite(strings.ToUpper(r.Method)),
		Conn:      connOf(r),
	}
	if _, up := d.upstreamOf(r); up != nil {
		var body []byte
		if pre != nil {
			body = pre.body
		}
		req.Write = up.write(r, body)
	}
	if d.hasFlight[replica] {
		call := d.inFlight[replica]
		req.Call = &call
	}
	d.requests = append(d.requests, req)
	d.changedLocked()
	matched := d.matchFaults(req)
	for _, f := range matched {
		req.Faults = append(req.Faults, f.id)
	}
	return req, matched
}

// connOf names the provider's connection a request came over: the proxy's conntag.Header for a request it
// forwarded for a declared service, else the listener's own connection.
func connOf(r *http.Request) conntag.Ref {
	own := conntag.From(r.Context()).Next()
	if r.Header.Get(ServiceHeader) != "" {
		if ref, ok := conntag.Parse(r.Header.Get(conntag.Header)); ok {
			return ref
		}
		return conntag.Ref{} // the proxy's own connection says nothing about the provider's
	}
	return own
}

// update runs fn on a recorded request under the lock.
func (d *Double) update(req *Request, fn func(*Request)) {
	d.mu.Lock()
	defer d.mu.Unlock()
	fn(req)
}
