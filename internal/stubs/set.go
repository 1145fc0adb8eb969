package stubs

import (
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/textproto"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Set is a loaded collection of mappings with the state of their scenarios. It is safe for concurrent use.
type Set struct {
	mappings []*Mapping // in matching order: priority, then the most recently loaded first

	mu     sync.Mutex
	states map[string]string
}

// NewSet orders mappings for matching: a lower priority number first and, among equals, the mapping loaded
// last first (WireMock's rule: a newer stub overrides an older one).
func NewSet(ms []*Mapping) *Set {
	out := append([]*Mapping(nil), ms...)
	for i, m := range out {
		m.order = i
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Priority != out[j].Priority {
			return out[i].Priority < out[j].Priority
		}
		return out[i].order > out[j].order
	})
	return &Set{mappings: out, states: map[string]string{}}
}

// Mappings returns the mappings in matching order.
func (s *Set) Mappings() []*Mapping { return append([]*Mapping(nil), s.mappings...) }

// Reset puts every scenario back in its Started state (the kit calls it between scenarios).
func (s *Set) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.states = map[string]string{}
}

// State is the current state of a scenario.
func (s *Set) State(scenario string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stateLocked(scenario)
}

func (s *Set) stateLocked(scenario string) string {
	if st, ok := s.states[scenario]; ok {
		return st
	}
	return StartedState
}

// Request is what the stubs match: the method, the URL as sent (path and query), the headers and the body.
type Request struct {
	Method string
	URL    *url.URL
	Header http.Header
	Body   []byte
}

// Match finds the mapping that answers a request and moves its scenario on; nil when none matches.
func (s *Set) Match(r *Request) *Mapping {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range s.mappings {
		if m.ScenarioName != "" && m.RequiredScenarioState != "" && s.stateLocked(m.ScenarioName) != m.RequiredScenarioState {
			continue
		}
		if !m.Request.matches(r) {
			continue
		}
		if m.ScenarioName != "" && m.NewScenarioState != "" {
			s.states[m.ScenarioName] = m.NewScenarioState
		}
		return m
	}
	return nil
}

func (p *RequestPattern) matches(r *Request) bool {
	if p.Method != "ANY" && p.Method != strings.ToUpper(r.Method) {
		return false
	}
	if !p.matchURL(r.URL) {
		return false
	}
	if len(p.PathParams) > 0 {
		vals, _ := p.pathValues(r.URL.EscapedPath())
		for name, m := range p.PathParams {
			v, ok := vals[name]
			if !m.Match(v, ok) {
				return false
			}
		}
	}
	query := r.URL.Query()
	for name, m := range p.Query {
		if !matchAny(&m, query[name]) {
			return false
		}
	}
	for name, m := range p.Headers {
		if !matchAny(&m, r.Header.Values(name)) {
			return false
		}
	}
	if len(p.Cookies) > 0 {
		hr := &http.Request{Header: r.Header}
		for name, m := range p.Cookies {
			var vals []string
			for _, c := range hr.Cookies() {
				if c.Name == name {
					vals = append(vals, c.Value)
				}
			}
			if !matchAny(&m, vals) {
				return false
			}
		}
	}
	if p.BasicAuth != nil {
		hr := &http.Request{Header: r.Header}
		user, pass, ok := hr.BasicAuth()
		if !ok || user != p.BasicAuth.Username || pass != p.BasicAuth.Password {
			return false
		}
	}
	body := string(r.Body)
	for i := range p.Body {
		if !p.Body[i].Match(body, true) {
			return false
		}
	}
	return true
}

// matchAny applies a matcher to a multi-valued attribute: it holds when any value satisfies it (absent and
// the negative matchers look at the whole attribute).
func matchAny(m *Matcher, vals []string) bool {
	if len(vals) == 0 {
		return m.Match("", false)
	}
	if m.Kind == MatchDoesNotContain || m.Kind == MatchDoesNotMatch {
		for _, v := range vals {
			if !m.Match(v, true) {
				return false
			}
		}
		return true
	}
	for _, v := range vals {
		if m.Match(v, true) {
			return true
		}
	}
	return false
}

func (p *RequestPattern) matchURL(u *url.URL) bool {
	full := u.EscapedPath()
	if u.RawQuery != "" {
		full += "?" + u.RawQuery
	}
	switch p.URLKind {
	case URLEqual:
		return full == p.URL
	case URLPattern:
		return p.urlRe.MatchString(full)
	case URLPath:
		return u.EscapedPath() == p.URL || u.Path == p.URL
	case URLPathPattern:
		return p.urlRe.MatchString(u.EscapedPath())
	case URLPathTemplate:
		_, ok := p.pathValues(u.EscapedPath())
		return ok
	}
	return true
}

// Nearest is the mapping that comes closest to matching a request, with the parts of the request it differs
// in (for the 404 of an unmatched request and for findings). Nil when there are no mappings. Closest is
// WireMock's closest stub: the least weighted distance (distance.go), the first in matching order among
// equals.
func (s *Set) Nearest(r *Request) (*Mapping, []string) {
	var near *Mapping
	var nearest result
	for _, m := range s.mappings {
		d := m.Request.distance(r)
		if near == nil || javaCompare(d.d, nearest.d) < 0 {
			near, nearest = m, d
		}
	}
	if near == nil {
		return nil, nil
	}
	why := near.Request.misses(r)
	if near.ScenarioName != "" && near.RequiredScenarioState != "" && s.State(near.ScenarioName) != near.RequiredScenarioState {
		why = append(why, "scenario state (needs "+near.RequiredScenarioState+")")
	}
	return near, why
}

// misses lists the parts of a request a pattern does not match.
func (p *RequestPattern) misses(r *Request) []string {
	var out []string
	if p.Method != "ANY" && p.Method != strings.ToUpper(r.Method) {
		out = append(out, "method (wants "+p.Method+")")
	}
	if !p.matchURL(r.URL) {
		out = append(out, string(p.URLKind)+" "+p.URL)
	}
	for _, name := range sortedKeys(p.PathParams) {
		vals, _ := p.pathValues(r.URL.EscapedPath())
		m := p.PathParams[name]
		if v, ok := vals[name]; !m.Match(v, ok) {
			out = append(out, "path parameter "+name)
		}
	}
	query := r.URL.Query()
	for _, name := range slices.Sorted(maps.Keys(p.Query)) {
		m := p.Query[name]
		if !matchAny(&m, query[name]) {
			out = append(out, "query parameter "+name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(p.Headers)) {
		m := p.Headers[name]
		if !matchAny(&m, r.Header.Values(name)) {
			out = append(out, "header "+name)
		}
	}
	if len(p.Cookies) > 0 || p.BasicAuth != nil {
		probe := *p
		probe.Method, probe.URLKind, probe.Query, probe.Headers, probe.Body = "ANY", URLAny, nil, nil, nil
		if !probe.matches(r) {
			out = append(out, "cookies or basic authentication")
		}
	}
	body := string(r.Body)
	for i := range p.Body {
		if !p.Body[i].Match(body, true) {
			out = append(out, fmt.Sprintf("body pattern %d (%s)", i+1, p.Body[i].Kind))
		}
	}
	return out
}

// maxBody bounds the request body the server reads.
const maxBody = 8 << 20

// ServeHTTP answers a request from the mappings: the matched mapping's response, or 404 naming the closest
// mapping when none matches (as WireMock answers an unmatched request).
func (s *Set) ServeHTTP(w http.ResponseWriter, hr *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, hr.Body, maxBody))
	if err != nil {
		http.Error(w, "stubs: could not read the request body: "+err.Error(), http.StatusRequestEntityTooLarge)
		return
	}
	if strings.HasPrefix(hr.URL.Path, AdminPrefix) {
		s.serveAdmin(w, hr, body)
		return
	}
	req := &Request{Method: hr.Method, URL: hr.URL, Header: hr.Header, Body: body}
	m := s.Match(req)
	if m == nil {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprintf(w, "Request was not matched by any stub: %s %s\n", hr.Method, hr.URL.RequestURI())
		if near, why := s.Nearest(req); near != nil {
			fmt.Fprintf(w, "Closest stub: %s, which differs in %s\n", near.Where(), strings.Join(why, ", "))
		}
		return
	}
	s.write(w, hr, m)
}

func (s *Set) write(w http.ResponseWriter, hr *http.Request, m *Mapping) {
	resp := m.Response
	if resp.DelayMillis > 0 {
		t := time.NewTimer(time.Duration(resp.DelayMillis) * time.Millisecond)
		select {
		case <-t.C:
		case <-hr.Context().Done():
			t.Stop()
			return
		}
	}
	if resp.Fault != FaultNone {
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				if resp.Fault == FaultConnectionDrop {
					reset(conn)
				}
				conn.Close()
				return
			}
		}
		panic(http.ErrAbortHandler) // the server closes the connection without an answer
	}
	if _, ok := resp.Headers["Content-Type"]; !ok {
		// Go's server would sniff one from the body; WireMock sends none, and neither does the kit.
		w.Header()["Content-Type"] = nil
	}
	for k, vs := range resp.Headers {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(resp.Body)))
	w.WriteHeader(resp.Status)
	if hr.Method != http.MethodHead {
		_, _ = w.Write(resp.Body)
	}
}

// reset makes closing conn send a TCP reset (RST) instead of a clean end (FIN), as WireMock's
// CONNECTION_RESET_BY_PEER does, reaching the socket through wrappers that expose it (TLS, the egress
// proxy's metering).
func reset(conn net.Conn) {
	for range 8 {
		if tc, ok := conn.(*net.TCPConn); ok {
			_ = tc.SetLinger(0)
			return
		}
		inner, ok := conn.(interface{ NetConn() net.Conn })
		if !ok {
			return
		}
		conn = inner.NetConn()
	}
}

func canonicalHeader(k string) string { return textproto.CanonicalMIMEHeaderKey(k) }
