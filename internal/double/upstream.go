package double

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
)

// ServiceHeader names the declared service a request belongs to. The kit's egress proxy sets it (after
// removing any value the client sent) when it forwards a request for one of the provider's own services to
// the replica's listener; the double then records the request, applies the step's faults to it, and has the
// service's stand-in answer it instead of the double's own endpoints.
const ServiceHeader = "X-Astrabox-Service"

// HostHeader carries the production host:port the client addressed (set by the egress proxy).
const HostHeader = "X-Astrabox-Host"

// Upstream is the stand-in of a declared service behind the double.
type Upstream struct {
	// Handler answers the service's requests (stubs, or a reverse proxy to the author's fake).
	Handler http.Handler
	// OperationHeader names the request header that carries an operation's identity, so fences apply to the
	// service's writes as to the double's own ("" = X-Astrabox-Operation).
	OperationHeader string
	// IsWrite classifies a request with its body; nil means every method but GET, HEAD and OPTIONS writes.
	IsWrite func(r *http.Request, body []byte) bool
}

func (u *Upstream) write(r *http.Request, body []byte) bool {
	if u.IsWrite != nil {
		return u.IsWrite(r, body)
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	return true
}

// upstreamOf returns the stand-in a request names, if the double has one by that name.
func (d *Double) upstreamOf(r *http.Request) (string, *Upstream) {
	name := r.Header.Get(ServiceHeader)
	if name == "" {
		return "", nil
	}
	up, ok := d.upstreams[name]
	if !ok {
		return name, nil
	}
	return name, &up
}

// serviceAnswer is a stand-in's answer, buffered so that the double can record it before sending it (or drop
// the connection after the write applied).
type serviceAnswer struct {
	status int
	header http.Header
	body   []byte
}

// applyUpstream has the stand-in answer a request after the fence check; a 2xx answer to a write counts as
// applied, in apply order with the double's own writes.
func (d *Double) applyUpstream(req *Request, up *Upstream, r *http.Request, body []byte) serviceAnswer {
	write := req.Write
	if write && req.Operation != "" {
		d.mu.Lock()
		_, fenced := d.state.fences[req.Operation]
		if fenced {
			req.Fenced = true
		}
		d.mu.Unlock()
		if fenced {
			return serviceAnswer{status: http.StatusConflict, header: http.Header{"Content-Type": {"application/json"}}, body: []byte(`{"error":"fenced"}` + "\n")}
		}
	}
	// A request that reached the double is applied even if its sender is gone meanwhile (a lost host whose
	// held write is released later), as the double applies its own writes: the stand-in must not see the
	// client's cancellation.
	// The double's own end (Close) does cancel it, so that a stand-in that never answers cannot hold the
	// scenario's end; so does the answer bound.
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	defer cancel()
	stop := context.AfterFunc(d.stop, cancel)
	defer stop()
	out := r.Clone(ctx)
	out.Header.Del(ServiceHeader)
	out.Header.Del(HostHeader)
	out.Body = http.NoBody
	if len(body) > 0 {
		out.Body = nopCloser{bytes.NewReader(body)}
		out.ContentLength = int64(len(body))
	}
	a := serveBounded(up.Handler, out, req.Service)
	if write && a.status >= 200 && a.status < 300 {
		d.mu.Lock()
		req.Applied = true
		d.applySeq++
		req.ApplyOrder = d.applySeq
		d.changedLocked()
		d.mu.Unlock()
	}
	return a
}

func (d *Double) finishService(req *Request, w http.ResponseWriter, a serviceAnswer) {
	d.update(req, func(q *Request) {
		q.Status = a.status
		q.Done = true
		q.Answer = a.body[:min(len(a.body), int(d.maxBody))]
	})
	for k, vs := range a.header {
		if k == "Content-Length" {
			continue
		}
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(a.body)))
	w.WriteHeader(a.status)
	_, _ = w.Write(a.body)
}

// MaxServiceAnswer is the largest answer body the double takes from a declared service's stand-in; a larger
// one is cut off and answered 502 to the provider, naming the service and the bound.
const MaxServiceAnswer = 64 << 20

// serveBounded has h answer r into a buffer of at most MaxServiceAnswer bytes. A handler that gives up
// mid-answer (a reverse proxy whose fake closed the connection, or whose request the double cancelled,
// panics with http.ErrAbortHandler) or writes more than the bound is answered 502 with the reason.
func serveBounded(h http.Handler, r *http.Request, service string) (a serviceAnswer) {
	rec := &boundedRecorder{header: http.Header{}, max: MaxServiceAnswer}
	defer func() {
		if p := recover(); p != nil {
			if p != http.ErrAbortHandler { //nolint:errorlint // the sentinel is panicked as is
				panic(p)
			}
			a = badGateway(fmt.Sprintf("astrabox: service %s's stand-in stopped mid-answer (%s %s): %v", service, r.Method, r.URL.Path, rec.why()))
		}
	}()
	h.ServeHTTP(rec, r)
	if rec.over {
		return badGateway(fmt.Sprintf("astrabox: service %s's answer to %s %s exceeds %d MiB; the kit cut it off", service, r.Method, r.URL.Path, MaxServiceAnswer>>20))
	}
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	return serviceAnswer{status: rec.status, header: rec.header, body: rec.body.Bytes()}
}

func badGateway(msg string) serviceAnswer {
	return serviceAnswer{status: http.StatusBadGateway, header: http.Header{"Content-Type": {"text/plain; charset=utf-8"}}, body: []byte(msg + "\n")}
}

// errAnswerTooLarge is what a boundedRecorder's Write returns past its bound.
var errAnswerTooLarge = errors.New("answer larger than the bound")

// boundedRecorder is a ResponseWriter that keeps at most max bytes of body and refuses the rest.
type boundedRecorder struct {
	header http.Header
	status int
	body   bytes.Buffer
	max    int
	over   bool
}

func (b *boundedRecorder) Header() http.Header { return b.header }

func (b *boundedRecorder) WriteHeader(code int) {
	if b.status == 0 {
		b.status = code
	}
}

func (b *boundedRecorder) Write(p []byte) (int, error) {
	if b.status == 0 {
		b.status = http.StatusOK
	}
	if b.body.Len()+len(p) > b.max {
		b.over = true
		return 0, errAnswerTooLarge
	}
	return b.body.Write(p)
}

func (b *boundedRecorder) why() string {
	if b.over {
		return fmt.Sprintf("its answer exceeds %d MiB", b.max>>20)
	}
	return "cancelled at the end of the scenario, or the service closed the connection"
}

type nopCloser struct{ *bytes.Reader }

func (nopCloser) Close() error { return nil }
