// Package stubs serves declarative HTTP stubs written in WireMock's JSON mapping format, so that a provider
// author's existing WireMock mappings can stand in for one of the provider's external services without a
// fake of their own.
//
// The supported subset (docs/services.md lists it for users, with what differs from WireMock 3): request
// matching by method (or ANY), url, urlPattern, urlPath, urlPathPattern and urlPathTemplate (with
// pathParameters); queryParameters, headers and cookies with the
// matchers equalTo (and caseInsensitive), contains, doesNotContain, matches, doesNotMatch, absent, and, or;
// bodyPatterns with those plus equalToJson (ignoreArrayOrder, ignoreExtraElements and the json-unit
// placeholders) and matchesJsonPath (an expression, or an expression with a sub-matcher); basicAuthCredentials;
// priority; responses with status, statusMessage, headers, body, jsonBody, base64Body, bodyFileName (under
// __files), fixedDelayMilliseconds and the faults EMPTY_RESPONSE and CONNECTION_RESET_BY_PEER; stateful
// scenarios with scenarioName, requiredScenarioState and newScenarioState. Anything else (XML and XPath,
// response templating, proxying, webhooks) is refused when the mappings are loaded, with the file and the
// mapping, never silently ignored.
package stubs

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// StartedState is the state every scenario begins in, as in WireMock.
const StartedState = "Started"

// DefaultPriority is the priority of a mapping that names none (1 is the highest).
const DefaultPriority = 5

// Fault is a transport-level failure a response simulates.
type Fault string

// The faults a stub response may name.
const (
	FaultNone           Fault = ""
	FaultEmptyResponse  Fault = "EMPTY_RESPONSE"
	FaultConnectionDrop Fault = "CONNECTION_RESET_BY_PEER"
)

// Limits on what a mappings directory may hold, so that a hostile or mistaken directory cannot exhaust memory.
const (
	maxFileBytes = 8 << 20
	maxMappings  = 10000
)

// Mapping is one stub: a request pattern and the response it answers with.
type Mapping struct {
	ID       string
	Name     string
	Priority int
	Request  RequestPattern
	Response Response
	// ScenarioName, RequiredScenarioState and NewScenarioState make the stub stateful.
	ScenarioName, RequiredScenarioState, NewScenarioState string
	// File and Index say where the mapping was read: the file and its position in the file.
	File  string
	Index int

	order int
}

// Where names the mapping for messages: its file, its position and its name or id when it has one.
func (m *Mapping) Where() string {
	s := fmt.Sprintf("%s mapping %d", m.File, m.Index+1)
	switch {
	case m.Name != "":
		s += fmt.Sprintf(" (%q)", m.Name)
	case m.ID != "":
		s += " (" + m.ID + ")"
	}
	return s
}

// URLKind says how a request pattern matches the URL.
type URLKind string

// The URL matchers of a request pattern.
const (
	URLAny          URLKind = ""
	URLEqual        URLKind = "url"
	URLPattern      URLKind = "urlPattern"
	URLPath         URLKind = "urlPath"
	URLPathPattern  URLKind = "urlPathPattern"
	URLPathTemplate URLKind = "urlPathTemplate"
)

// RequestPattern is what a request must look like for a mapping to answer it.
type RequestPattern struct {
	// Method is an upper-case HTTP method, or "ANY" (also when the mapping names none).
	Method  string
	URLKind URLKind
	URL     string
	Query   map[string]Matcher
	Headers map[string]Matcher
	Cookies map[string]Matcher
	// PathParams match the variables of a urlPathTemplate by name.
	PathParams map[string]Matcher
	Body       []Matcher
	// BasicAuth, when set, requires these credentials.
	BasicAuth *Credentials

	urlRe *regexp.Regexp
	// template is a urlPathTemplate compiled as WireMock's PathTemplate compiles it, and vars the names of
	// its variables in order.
	template *regexp.Regexp
	vars     []string
}

// Credentials are HTTP basic authentication credentials.
type Credentials struct {
	Username string `json:"username"`
	Password string `json:"password"`
}

// Response is what a mapping answers with.
type Response struct {
	Status        int
	StatusMessage string
	Headers       map[string][]string
	Body          []byte
	// DelayMillis is WireMock's fixedDelayMilliseconds.
	DelayMillis int
	Fault       Fault
}

type rawMapping struct {
	ID                    string          `json:"id"`
	UUID                  string          `json:"uuid"`
	Name                  string          `json:"name"`
	Priority              *int            `json:"priority"`
	Request               json.RawMessage `json:"request"`
	Response              json.RawMessage `json:"response"`
	ScenarioName          string          `json:"scenarioName"`
	RequiredScenarioState string          `json:"requiredScenarioState"`
	NewScenarioState      string          `json:"newScenarioState"`
	Persistent            *bool           `json:"persistent"`
	Metadata              json.RawMessage `json:"metadata"`
	// InsertionIndex is written by WireMock 3 when it saves a mapping; like WireMock, the kit reads it and
	// orders mappings by the order it loads them instead.
	InsertionIndex      json.RawMessage `json:"insertionIndex"`
	PostServeActions    json.RawMessage `json:"postServeActions"`
	ServeEventListeners json.RawMessage `json:"serveEventListeners"`
}

type rawRequest struct {
	Method               string                     `json:"method"`
	URL                  *string                    `json:"url"`
	URLPattern           *string                    `json:"urlPattern"`
	URLPath              *string                    `json:"urlPath"`
	URLPathPattern       *string                    `json:"urlPathPattern"`
	URLPathTemplate      *string                    `json:"urlPathTemplate"`
	QueryParameters      map[string]json.RawMessage `json:"queryParameters"`
	Headers              map[string]json.RawMessage `json:"headers"`
	Cookies              map[string]json.RawMessage `json:"cookies"`
	BodyPatterns         []json.RawMessage          `json:"bodyPatterns"`
	BasicAuthCredentials *Credentials               `json:"basicAuthCredentials"`
	PathParameters       map[string]json.RawMessage `json:"pathParameters"`
}

type rawResponse struct {
	Status                 *int            `json:"status"`
	StatusMessage          string          `json:"statusMessage"`
	Headers                map[string]any  `json:"headers"`
	Body                   *string         `json:"body"`
	JSONBody               json.RawMessage `json:"jsonBody"`
	Base64Body             *string         `json:"base64Body"`
	BodyFileName           *string         `json:"bodyFileName"`
	FixedDelayMilliseconds *int            `json:"fixedDelayMilliseconds"`
	Fault                  Fault           `json:"fault"`
	Transformers           []string        `json:"transformers"`
	ProxyBaseURL           *string         `json:"proxyBaseUrl"`
	DelayDistribution      json.RawMessage `json:"delayDistribution"`
	ChunkedDribbleDelay    json.RawMessage `json:"chunkedDribbleDelay"`
	TransformerParameters  json.RawMessage `json:"transformerParameters"`
}

// Error is a mapping that cannot be loaded: where it is and what is wrong with it.
type Error struct {
	File  string
	Index int // -1 when the whole file is at fault
	Err   error
}

func (e *Error) Error() string {
	if e.Index < 0 {
		return fmt.Sprintf("%s: %v", e.File, e.Err)
	}
	return fmt.Sprintf("%s: mapping %d: %v", e.File, e.Index+1, e.Err)
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Parse reads the mappings of one file: a single mapping object, or {"mappings": [...]} as WireMock's
// export writes. files resolves bodyFileName (nil: no body files).
func Parse(file string, data []byte, files fs.FS) ([]*Mapping, error) {
	if len(data) > maxFileBytes {
		return nil, &Error{File: file, Index: -1, Err: fmt.Errorf("larger than %d bytes", maxFileBytes)}
	}
	if d := nestingDepth(data); d > maxJSONDepth {
		return nil, &Error{File: file, Index: -1, Err: fmt.Errorf("JSON nested %d deep (more than %d)", d, maxJSONDepth)}
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, &Error{File: file, Index: -1, Err: fmt.Errorf("not a JSON object: %w", jsonErr(data, err))}
	}
	raws := []json.RawMessage{data}
	if list, ok := top["mappings"]; ok {
		if err := json.Unmarshal(list, &raws); err != nil {
			return nil, &Error{File: file, Index: -1, Err: fmt.Errorf("\"mappings\" must be an array of mappings")}
		}
	}
	if len(raws) > maxMappings {
		return nil, &Error{File: file, Index: -1, Err: fmt.Errorf("more than %d mappings", maxMappings)}
	}
	var out []*Mapping
	for i, raw := range raws {
		m, err := parseMapping(raw, files)
		if err != nil {
			return nil, &Error{File: file, Index: i, Err: err}
		}
		m.File, m.Index = file, i
		out = append(out, m)
	}
	return out, nil
}

// jsonErr adds the line of a syntax error.
func jsonErr(data []byte, err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		line := 1 + bytes.Count(data[:min(int(se.Offset), len(data))], []byte("\n"))
		return fmt.Errorf("line %d: %w", line, err)
	}
	return err
}

func parseMapping(raw json.RawMessage, files fs.FS) (*Mapping, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var rm rawMapping
	if err := dec.Decode(&rm); err != nil {
		return nil, fmt.Errorf("%w (see docs/architecture.md for the supported WireMock subset)", err)
	}
	switch {
	case len(rm.PostServeActions) > 0 || len(rm.ServeEventListeners) > 0:
		return nil, fmt.Errorf("webhooks and serve-event listeners are not supported")
	case len(rm.Request) == 0:
		return nil, fmt.Errorf("a mapping needs a \"request\"")
	}
	m := &Mapping{ID: rm.ID, Name: rm.Name, Priority: DefaultPriority, ScenarioName: rm.ScenarioName,
		RequiredScenarioState: rm.RequiredScenarioState, NewScenarioState: rm.NewScenarioState}
	if m.ID == "" {
		m.ID = rm.UUID
	}
	if rm.Priority != nil {
		if *rm.Priority < 1 {
			return nil, fmt.Errorf("priority must be 1 or more, got %d", *rm.Priority)
		}
		m.Priority = *rm.Priority
	}
	if m.ScenarioName == "" && (m.RequiredScenarioState != "" || m.NewScenarioState != "") {
		return nil, fmt.Errorf("requiredScenarioState and newScenarioState need a scenarioName")
	}
	req, err := parseRequest(rm.Request)
	if err != nil {
		return nil, fmt.Errorf("request: %w", err)
	}
	m.Request = req
	if m.Response, err = parseResponse(rm.Response, files); err != nil {
		return nil, fmt.Errorf("response: %w", err)
	}
	return m, nil
}

func parseRequest(raw json.RawMessage) (RequestPattern, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var rr rawRequest
	if err := dec.Decode(&rr); err != nil {
		return RequestPattern{}, err
	}
	p := RequestPattern{Method: strings.ToUpper(rr.Method), BasicAuth: rr.BasicAuthCredentials}
	if p.Method == "" {
		p.Method = "ANY"
	}
	urls := []struct {
		kind URLKind
		v    *string
	}{{URLEqual, rr.URL}, {URLPattern, rr.URLPattern}, {URLPath, rr.URLPath}, {URLPathPattern, rr.URLPathPattern}, {URLPathTemplate, rr.URLPathTemplate}}
	for _, u := range urls {
		if u.v == nil {
			continue
		}
		if p.URLKind != URLAny {
			return p, fmt.Errorf("give one of url, urlPattern, urlPath, urlPathPattern and urlPathTemplate, not %s and %s", p.URLKind, u.kind)
		}
		p.URLKind, p.URL = u.kind, *u.v
	}
	var err error
	switch p.URLKind {
	case URLPattern, URLPathPattern:
		if p.urlRe, err = compileFull(p.URL, false); err != nil {
			return p, fmt.Errorf("%s: %w", p.URLKind, err)
		}
	case URLPathTemplate:
		p.template, p.vars = compileTemplate(p.URL)
	}
	if len(rr.PathParameters) > 0 && p.URLKind != URLPathTemplate {
		return p, fmt.Errorf("pathParameters need a urlPathTemplate naming them, such as \"/users/{id}\"")
	}
	if p.PathParams, err = parseMatchers("pathParameters", rr.PathParameters, false); err != nil {
		return p, err
	}
	for name := range p.PathParams {
		if !slices.Contains(p.vars, name) {
			return p, fmt.Errorf("pathParameters %q: the urlPathTemplate %q has no {%s}", name, p.URL, name)
		}
	}
	if p.Query, err = parseMatchers("queryParameters", rr.QueryParameters, false); err != nil {
		return p, err
	}
	if p.Headers, err = parseMatchers("headers", rr.Headers, true); err != nil {
		return p, err
	}
	if p.Cookies, err = parseMatchers("cookies", rr.Cookies, false); err != nil {
		return p, err
	}
	for i, b := range rr.BodyPatterns {
		m, err := parseMatcher(b)
		if err != nil {
			return p, fmt.Errorf("bodyPatterns[%d]: %w", i, err)
		}
		p.Body = append(p.Body, m)
	}
	return p, nil
}

func parseMatchers(what string, raw map[string]json.RawMessage, canonical bool) (map[string]Matcher, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	out := make(map[string]Matcher, len(raw))
	for _, k := range slices.Sorted(maps.Keys(raw)) {
		m, err := parseMatcher(raw[k])
		if err != nil {
			return nil, fmt.Errorf("%s %q: %w", what, k, err)
		}
		name := k
		if canonical {
			name = strings.ToLower(k)
		}
		out[name] = m
	}
	return out, nil
}

func parseResponse(raw json.RawMessage, files fs.FS) (Response, error) {
	r := Response{Status: 200}
	if len(raw) == 0 {
		return r, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var rr rawResponse
	if err := dec.Decode(&rr); err != nil {
		return r, err
	}
	switch {
	case len(rr.Transformers) > 0 || len(rr.TransformerParameters) > 0:
		return r, fmt.Errorf("response templating (transformers) is not supported: answer with a fixed body, or run your own fake (`run =`)")
	case rr.ProxyBaseURL != nil:
		return r, fmt.Errorf("proxyBaseUrl is not supported: a stub never reaches a real system")
	case len(rr.DelayDistribution) > 0 || len(rr.ChunkedDribbleDelay) > 0:
		return r, fmt.Errorf("random and dribbled delays are not supported: use fixedDelayMilliseconds")
	}
	if rr.Status != nil {
		if *rr.Status < 100 || *rr.Status > 599 {
			return r, fmt.Errorf("status %d is not an HTTP status", *rr.Status)
		}
		r.Status = *rr.Status
	}
	r.StatusMessage = rr.StatusMessage
	switch rr.Fault {
	case FaultNone, FaultEmptyResponse, FaultConnectionDrop:
		r.Fault = rr.Fault
	default:
		return r, fmt.Errorf("fault %q is not supported (EMPTY_RESPONSE, CONNECTION_RESET_BY_PEER)", rr.Fault)
	}
	if rr.FixedDelayMilliseconds != nil {
		if *rr.FixedDelayMilliseconds < 0 || *rr.FixedDelayMilliseconds > 600000 {
			return r, fmt.Errorf("fixedDelayMilliseconds must be between 0 and 600000")
		}
		r.DelayMillis = *rr.FixedDelayMilliseconds
	}
	headers, err := parseHeaders(rr.Headers)
	if err != nil {
		return r, err
	}
	r.Headers = headers
	bodies := 0
	if rr.Body != nil {
		bodies++
		r.Body = []byte(*rr.Body)
	}
	if len(rr.JSONBody) > 0 {
		bodies++
		var compact bytes.Buffer
		if err := json.Compact(&compact, rr.JSONBody); err != nil {
			return r, fmt.Errorf("jsonBody: %w", err)
		}
		// WireMock 3 sends a jsonBody with no Content-Type unless the mapping sets one; so does the kit.
		r.Body = compact.Bytes()
	}
	if rr.Base64Body != nil {
		bodies++
		if r.Body, err = base64.StdEncoding.DecodeString(*rr.Base64Body); err != nil {
			return r, fmt.Errorf("base64Body: %w", err)
		}
	}
	if rr.BodyFileName != nil {
		bodies++
		if r.Body, err = readBodyFile(files, *rr.BodyFileName); err != nil {
			return r, err
		}
	}
	if bodies > 1 {
		return r, fmt.Errorf("give one of body, jsonBody, base64Body and bodyFileName")
	}
	return r, nil
}

func parseHeaders(raw map[string]any) (map[string][]string, error) {
	out := map[string][]string{}
	for _, k := range slices.Sorted(maps.Keys(raw)) {
		name := canonicalHeader(k)
		switch v := raw[k].(type) {
		case string:
			out[name] = append(out[name], v)
		case []any:
			for _, e := range v {
				s, ok := e.(string)
				if !ok {
					return nil, fmt.Errorf("header %q: values must be strings", k)
				}
				out[name] = append(out[name], s)
			}
		default:
			return nil, fmt.Errorf("header %q: a value must be a string or an array of strings", k)
		}
	}
	return out, nil
}

func readBodyFile(files fs.FS, name string) ([]byte, error) {
	if files == nil {
		return nil, fmt.Errorf("bodyFileName %q: no __files directory next to the mappings", name)
	}
	clean := filepath.ToSlash(filepath.Clean(name))
	if !fs.ValidPath(clean) {
		return nil, fmt.Errorf("bodyFileName %q must be a relative path inside __files", name)
	}
	f, err := files.Open(clean)
	if err != nil {
		return nil, fmt.Errorf("bodyFileName %q: %w", name, err)
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return nil, fmt.Errorf("bodyFileName %q is not a regular file", name)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxFileBytes+1))
	if err == nil && len(b) > maxFileBytes {
		err = fmt.Errorf("larger than %d bytes", maxFileBytes)
	}
	if err != nil {
		return nil, fmt.Errorf("bodyFileName %q: %w", name, err)
	}
	return b, nil
}

// Load reads every *.json mapping under dir/mappings (WireMock's layout) or, when there is no such
// directory, under dir itself; body files come from dir/__files. Files load in name order.
func Load(dir string) (*Set, error) {
	mdir := filepath.Join(dir, "mappings")
	if st, err := os.Stat(mdir); err != nil || !st.IsDir() {
		mdir = dir
	}
	var files fs.FS
	if st, err := os.Stat(filepath.Join(dir, "__files")); err == nil && st.IsDir() {
		files = os.DirFS(filepath.Join(dir, "__files"))
	}
	var names []string
	err := filepath.WalkDir(mdir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != mdir && d.Name() == "__files" {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.EqualFold(filepath.Ext(p), ".json") {
			names = append(names, p)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read stubs %s: %w", dir, err)
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("no *.json mapping under %s: put WireMock mappings in %s", dir, filepath.Join(dir, "mappings"))
	}
	sort.Strings(names)
	var all []*Mapping
	var refused []error
	for _, n := range names {
		data, err := readRegular(n)
		if err == nil {
			var ms []*Mapping
			if ms, err = Parse(n, data, files); err == nil {
				all = append(all, ms...)
			}
		}
		if err != nil {
			refused = append(refused, err)
			continue
		}
		if len(all) > maxMappings {
			return nil, fmt.Errorf("stubs %s: more than %d mappings", dir, maxMappings)
		}
	}
	if len(refused) > 0 {
		return nil, &LoadError{Dir: dir, Files: len(names), Refused: refused}
	}
	return NewSet(all), nil
}

// LoadError is every file of a stubs directory that could not be loaded, reported at once so that an
// author fixes them in one pass.
type LoadError struct {
	Dir     string
	Files   int     // how many mapping files the directory holds
	Refused []error // one per refused file (an *Error when the file was read)
}

func (e *LoadError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "stubs %s: %d of %d mapping files refused", e.Dir, len(e.Refused), e.Files)
	for _, err := range e.Refused {
		b.WriteString("\n  - ")
		b.WriteString(err.Error())
	}
	return b.String()
}

// Unwrap returns the refusals, so that errors.As finds each *Error.
func (e *LoadError) Unwrap() []error { return e.Refused }

func readRegular(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("read stub %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return nil, fmt.Errorf("stub %s is not a regular file", name)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read stub %s: %w", name, err)
	}
	if len(b) > maxFileBytes {
		return nil, &Error{File: name, Index: -1, Err: fmt.Errorf("larger than %d bytes", maxFileBytes)}
	}
	return b, nil
}
