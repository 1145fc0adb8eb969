package double

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// answer is what the double will send for one request.
type answer struct {
	status int
	body   any    // marshalled as JSON; nil means no body
	allow  string // Allow header for 405
}

func errAnswer(status int, format string, args ...any) answer {
	return answer{status: status, body: map[string]string{"error": fmt.Sprintf(format, args...)}}
}

var closedAnswer = errAnswer(http.StatusServiceUnavailable, "deployment double closed")

// serve handles one request received on replica's listener.
func (d *Double) serve(replica string, w http.ResponseWriter, r *http.Request) {
	if !d.enter() {
		writeAnswer(w, closedAnswer)
		return
	}
	defer d.leave()

	service, up := d.upstreamOf(r)
	var pre *preread
	if up != nil {
		// A declared service's request is classified with its body (an RPC names its operation there),
		// so that the faults that act on writes count it rightly: read it before it arrives.
		b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, d.maxBody))
		pre = &preread{body: b, err: err}
	}
	req, faults := d.arrive(replica, r, pre)
	body, ok := d.readBody(req, w, r, service, up, pre)
	if !ok {
		return
	}
	drop, ok := d.applyFaults(req, w, faults)
	if !ok {
		return
	}
	if up != nil {
		sa := d.applyUpstream(req, up, r, body)
		if drop {
			d.drop(req, w)
			return
		}
		d.finishService(req, w, sa)
		return
	}
	a := d.apply(req, r.Header, body)
	if drop {
		d.drop(req, w)
		return
	}
	d.finish(req, w, a)
}

// preread is a request body read before the request was recorded.
type preread struct {
	body []byte
	err  error
}

// readBody reads the request's body (at most maxBody bytes) and records it, with the declared service it is
// for; it answers the request itself and returns false when the body cannot be read or the service has no
// stand-in.
func (d *Double) readBody(req *Request, w http.ResponseWriter, r *http.Request, service string, up *Upstream, pre *preread) ([]byte, bool) {
	var body []byte
	var err error
	if pre != nil {
		body, err = pre.body, pre.err
	} else {
		body, err = io.ReadAll(http.MaxBytesReader(w, r.Body, d.maxBody))
	}
	d.update(req, func(q *Request) {
		q.Body = body
		if service != "" {
			q.Service, q.Host = service, r.Header.Get(HostHeader)
			if up != nil && up.OperationHeader != "" {
				q.Operation = r.Header.Get(up.OperationHeader)
			}
		}
	})
	if service != "" && up == nil {
		d.finish(req, w, errAnswer(http.StatusBadGateway, "no stand-in for service %q", service))
		return nil, false
	}
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			d.finish(req, w, errAnswer(http.StatusRequestEntityTooLarge,
				"request body exceeds %d bytes", d.maxBody))
			return nil, false
		}
		d.finish(req, w, errAnswer(http.StatusBadRequest, "could not read the request body: %v", err))
		return nil, false
	}
	return body, true
}

// applyFaults applies the faults that match the request before it reaches its endpoint: delays, then holds,
// then unavailability. It reports whether the connection is to be dropped after the request applies, and
// returns false when it answered the request itself (closed while delayed or held, or unavailable).
func (d *Double) applyFaults(req *Request, w http.ResponseWriter, faults []*faultState) (drop, ok bool) {
	var holds []FaultID
	unavailable := false
	for _, fs := range faults {
		switch fs.f.Kind {
		case Delay:
			d.update(req, func(q *Request) { q.Delayed = true })
			if !d.delay(fs.f.Duration) {
				d.finish(req, w, closedAnswer)
				return false, false
			}
		case Hold:
			holds = append(holds, fs.id)
		case Unavailable:
			unavailable = true
		case DropAfterApply:
			drop = true
		}
	}
	if len(holds) > 0 && !d.hold(req, holds) {
		d.finish(req, w, closedAnswer)
		return false, false
	}
	if unavailable {
		d.update(req, func(q *Request) { q.Unavailable = true })
		d.finish(req, w, errAnswer(http.StatusServiceUnavailable, "unavailable"))
		return false, false
	}
	return drop, true
}

// drop records that the request applied and its connection was dropped before the answer, and drops it.
func (d *Double) drop(req *Request, w http.ResponseWriter) {
	d.update(req, func(q *Request) {
		q.Dropped = true
		q.Done = true
	})
	dropConnection(w)
}

func (d *Double) finish(req *Request, w http.ResponseWriter, a answer) {
	d.update(req, func(q *Request) {
		q.Status = a.status
		q.Done = true
	})
	writeAnswer(w, a)
}

func writeAnswer(w http.ResponseWriter, a answer) {
	if a.allow != "" {
		w.Header().Set("Allow", a.allow)
	}
	if a.body == nil {
		w.WriteHeader(a.status)
		return
	}
	data, err := json.Marshal(a.body)
	if err != nil { // cannot happen with our bodies; answer something well-formed anyway
		a.status = http.StatusInternalServerError
		data = []byte(`{"error":"internal error encoding the answer"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(data)+1))
	w.WriteHeader(a.status)
	_, _ = w.Write(append(data, '\n'))
}

// dropConnection closes the client connection without an answer.
func dropConnection(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			_ = conn.Close()
			return
		}
	}
	panic(http.ErrAbortHandler) // net/http aborts the connection without answering
}

// endpoint is a route of the spec table.
type endpoint struct {
	name      string
	methods   []string
	forbidden bool
	key       string // record key or principal id
}

const (
	epRecord       = "record"
	epFences       = "fences"
	epCredentials  = "credentials"
	epConsent      = "consent"
	epConsentCheck = "consent-check"
	epConsentFlows = "consent-flows"
	epAgents       = "agents"
	epDispatch     = "dispatch"
)

func route(path string) (endpoint, bool) {
	post := []string{http.MethodPost}
	switch path {
	case "/v1/fences":
		return endpoint{name: epFences, methods: post}, true
	case "/v1/credentials":
		return endpoint{name: epCredentials, methods: post}, true
	case "/v1/agents":
		return endpoint{name: epAgents, methods: post, forbidden: true}, true
	case "/v1/dispatch":
		return endpoint{name: epDispatch, methods: post, forbidden: true}, true
	}
	if key, ok := strings.CutPrefix(path, "/v1/records/"); ok && key != "" {
		return endpoint{name: epRecord, methods: []string{http.MethodGet, http.MethodPut, http.MethodDelete}, key: key}, true
	}
	if rest, ok := strings.CutPrefix(path, "/v1/consents/"); ok {
		parts := strings.Split(rest, "/")
		if parts[0] == "" {
			return endpoint{}, false
		}
		switch {
		case len(parts) == 1:
			return endpoint{name: epConsent, methods: []string{http.MethodGet}, key: parts[0]}, true
		case len(parts) == 2 && parts[1] == "check":
			return endpoint{name: epConsentCheck, methods: post, key: parts[0]}, true
		case len(parts) == 2 && parts[1] == "flows":
			return endpoint{name: epConsentFlows, methods: post, forbidden: true, key: parts[0]}, true
		}
	}
	return endpoint{}, false
}

func isWrite(method string) bool {
	return method == http.MethodPut || method == http.MethodPost || method == http.MethodDelete
}

// apply routes the request and executes it against the shared state, atomically. Fences are checked here,
// at the moment of applying, so a write held across a fence is refused.
func (d *Double) apply(req *Request, header http.Header, body []byte) answer {
	d.mu.Lock()
	defer d.mu.Unlock()
	a := d.applyLocked(req, header, body)
	if isWrite(req.Method) && a.status >= 200 && a.status < 300 {
		req.Applied = true
		d.applySeq++
		req.ApplyOrder = d.applySeq
	}
	return a
}

func (d *Double) applyLocked(req *Request, header http.Header, body []byte) answer {
	ep, ok := route(req.Path)
	if !ok {
		return errAnswer(http.StatusNotFound, "no such endpoint: %s %s (see the deployment double API)", req.Method, req.Path)
	}
	if !slices.Contains(ep.methods, req.Method) {
		a := errAnswer(http.StatusMethodNotAllowed, "method %s not allowed on %s: use %s",
			req.Method, req.Path, strings.Join(ep.methods, ", "))
		a.allow = strings.Join(ep.methods, ", ")
		return a
	}
	req.Forbidden = ep.forbidden
	if isWrite(req.Method) && ep.name != epFences && req.Operation != "" {
		if _, fenced := d.state.fences[req.Operation]; fenced {
			req.Fenced = true
			return errAnswer(http.StatusConflict, "fenced")
		}
	}
	switch ep.name {
	case epRecord:
		return d.record(req.Method, ep.key, header, body)
	case epFences:
		return d.fence(req, body)
	case epCredentials:
		return d.credential(req, body)
	case epConsent:
		return consentAnswer(d.consentLocked(ep.key))
	case epConsentCheck:
		if st, ok := d.state.onCheck[ep.key]; ok {
			c := d.consentLocked(ep.key)
			c.status = st
			d.state.consents[ep.key] = c
			delete(d.state.onCheck, ep.key)
		}
		return consentAnswer(d.consentLocked(ep.key))
	case epConsentFlows, epAgents:
		return answer{status: http.StatusCreated, body: map[string]any{}}
	case epDispatch:
		return answer{status: http.StatusAccepted, body: map[string]any{}}
	}
	return errAnswer(http.StatusNotFound, "no such endpoint: %s %s", req.Method, req.Path)
}

func consentAnswer(c consent) answer {
	return answer{status: http.StatusOK, body: map[string]string{"status": c.status, "url": c.url}}
}

func (d *Double) record(method, key string, header http.Header, body []byte) answer {
	cur, exists := d.state.records[key]
	switch method {
	case http.MethodGet:
		if !exists {
			return errAnswer(http.StatusNotFound, "no record for key %q", key)
		}
		return answer{status: http.StatusOK, body: map[string]any{"value": cur.Value, "version": cur.Version}}
	case http.MethodPut:
		obj, err := decodeObject(body)
		if err != nil {
			return errAnswer(http.StatusBadRequest, "%v", err)
		}
		value, ok := obj["value"]
		if !ok {
			return errAnswer(http.StatusBadRequest, `request body has no "value" field: send {"value": ...}`)
		}
		if a, failed := checkIfMatch(header, cur, exists); failed {
			return a
		}
		v := d.state.lastVersion[key] + 1
		d.state.lastVersion[key] = v
		d.state.records[key] = Record{Value: slices.Clone(value), Version: v}
		return answer{status: http.StatusOK, body: map[string]int64{"version": v}}
	default: // DELETE
		if a, failed := checkIfMatch(header, cur, exists); failed {
			return a
		}
		delete(d.state.records, key)
		return answer{status: http.StatusNoContent}
	}
}

// checkIfMatch applies compare-and-set: If-Match: N requires version N, If-Match: 0 requires no record.
func checkIfMatch(header http.Header, cur Record, exists bool) (answer, bool) {
	vals := header.Values("If-Match")
	if len(vals) == 0 {
		return answer{}, false
	}
	if len(vals) > 1 {
		return errAnswer(http.StatusBadRequest, "more than one If-Match header: send one version number"), true
	}
	want, err := strconv.ParseInt(strings.TrimSpace(vals[0]), 10, 64)
	if err != nil || want < 0 {
		return errAnswer(http.StatusBadRequest,
			"If-Match must be a non-negative integer version (0 means the record must not exist), got %q", vals[0]), true
	}
	if want == 0 && exists {
		return errAnswer(http.StatusPreconditionFailed, "version mismatch: record exists but If-Match is 0"), true
	}
	if want > 0 && (!exists || cur.Version != want) {
		return errAnswer(http.StatusPreconditionFailed, "version mismatch"), true
	}
	return answer{}, false
}

func (d *Double) fence(req *Request, body []byte) answer {
	obj, err := decodeObject(body)
	if err != nil {
		return errAnswer(http.StatusBadRequest, "%v", err)
	}
	agent, err := stringField(obj, "agent_id")
	if err != nil {
		return errAnswer(http.StatusBadRequest, "%v", err)
	}
	op, err := stringField(obj, "operation_id")
	if err != nil {
		return errAnswer(http.StatusBadRequest, "%v", err)
	}
	if _, ok := d.state.fences[op]; !ok {
		d.state.fences[op] = Fence{AgentID: agent, OperationID: op, Seq: req.Seq}
		d.state.fenceOrder = append(d.state.fenceOrder, op)
	}
	return answer{status: http.StatusOK, body: map[string]string{"fenced": op}}
}

func (d *Double) credential(req *Request, body []byte) answer {
	obj, err := decodeObject(body)
	if err != nil {
		return errAnswer(http.StatusBadRequest, "%v", err)
	}
	principal, err := stringField(obj, "principal_id")
	if err != nil {
		return errAnswer(http.StatusBadRequest, "%v", err)
	}
	audience, err := stringField(obj, "audience")
	if err != nil {
		return errAnswer(http.StatusBadRequest, "%v", err)
	}
	token := d.newTokenLocked()
	d.state.credentials = append(d.state.credentials,
		Credential{Token: token, PrincipalID: principal, Audience: audience, Seq: req.Seq})
	return answer{status: http.StatusCreated, body: map[string]any{"token": token, "expires_in": d.ttl}}
}

// decodeObject parses a body that must hold exactly one JSON object.
func decodeObject(body []byte) (map[string]json.RawMessage, error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, errors.New("request body is empty: send a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	var obj map[string]json.RawMessage
	if err := dec.Decode(&obj); err != nil {
		return nil, fmt.Errorf("request body is not a valid JSON object: %w", err)
	}
	if obj == nil {
		return nil, errors.New("request body is JSON null: send a JSON object")
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("request body has data after the JSON object: send exactly one object")
	}
	return obj, nil
}

// stringField returns a required, non-empty string field.
func stringField(obj map[string]json.RawMessage, name string) (string, error) {
	raw, ok := obj[name]
	if !ok {
		return "", fmt.Errorf("request body has no %q field", name)
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", fmt.Errorf("field %q must be a JSON string", name)
	}
	if s == "" {
		return "", fmt.Errorf("field %q must not be empty", name)
	}
	return s, nil
}
