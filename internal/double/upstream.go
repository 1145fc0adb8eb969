package double

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
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
	out := r.Clone(context.WithoutCancel(r.Context()))
	out.Header.Del(ServiceHeader)
	out.Header.Del(HostHeader)
	out.Body = http.NoBody
	if len(body) > 0 {
		out.Body = nopCloser{bytes.NewReader(body)}
		out.ContentLength = int64(len(body))
	}
	rec := httptest.NewRecorder()
	up.Handler.ServeHTTP(rec, out)
	res := rec.Result()
	a := serviceAnswer{status: res.StatusCode, header: res.Header, body: rec.Body.Bytes()}
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

type nopCloser struct{ *bytes.Reader }

func (nopCloser) Close() error { return nil }
