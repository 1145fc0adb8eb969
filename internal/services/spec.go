// Package services holds a provider project's declared external systems (`[tool.astrabox.services.NAME]`):
// which production base URLs each answers on, and how the kit stands it in during a run (the author's own
// fake, started on a free loopback port, or declarative WireMock-format stubs). It starts and stops fakes,
// resets them between scenarios, and turns each service into a handler for the egress proxy.
package services

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/astrabox-dev/astrabox/internal/egress"
	"github.com/astrabox-dev/astrabox/internal/seconds"
)

// ResetMode says how a fake's state is reset between scenarios.
type ResetMode string

// The reset modes of a fake.
const (
	// ResetRequest sends POST ResetPath to the fake; a fake that answers 404, 405 or 501 (it does not
	// implement the request) is restarted instead.
	ResetRequest ResetMode = "request"
	// ResetRestart stops the fake and starts it again.
	ResetRestart ResetMode = "restart"
	// ResetNone keeps the fake's state for the whole run (the author's choice, reported).
	ResetNone ResetMode = "none"
)

// ResetPath is the request a fake may implement to clear its state between scenarios.
const ResetPath = "/__astrabox/reset"

// DefaultSecretFields are the JSON field names whose values in a service's responses are secrets when the
// service names none.
var DefaultSecretFields = []string{"token", "access_token", "refresh_token", "id_token", "secret", "client_secret", "password"}

// Spec is one declared service.
type Spec struct {
	Name string
	// URLs are the production base URLs, as declared.
	URLs []string
	// Hosts are the "host:port" pairs derived from URLs (the default port of the scheme when none is given).
	Hosts []string
	// Run is the command line of the author's fake; {port} is replaced by the port the kit chose.
	Run string
	// Stubs is the absolute directory of WireMock mappings.
	Stubs string
	// Dir is where Run runs (the project directory).
	Dir string
	// Ready is the path the kit requests until the fake answers; ReadyTimeout bounds the wait.
	Ready        string
	ReadyTimeout time.Duration
	Reset        ResetMode
	// Reads are routes whose requests are reads although their method writes.
	Reads []egress.Route
	// OperationHeader names the request header that carries an operation's identity (RECOVER-TRUTH).
	OperationHeader string
	// SecretFields are JSON field names or pointers (starting with /) whose response values are secrets.
	SecretFields []string
	// Operation is where the service's requests name their RPC operation (nil: the protocols the kit knows,
	// see Classify); ReadOperations and WriteOperations are operation patterns that read or write.
	Operation       *Field
	ReadOperations  []string
	WriteOperations []string
	// IdempotencyKeys are further places a write's idempotency key is in (the Idempotency-Key header always
	// counts); Conditions are where a conditional write's condition is (If-Match, a check-and-set field).
	IdempotencyKeys []Field
	Conditions      []Field
	// Resource are the places a write names the resource it acts on, tried first (see Class.Resource).
	Resource []Field
	// Consent, when set, is how the suite moves a principal's consent at this service (the service holds a
	// prerequisite the provider must enforce: UA-AUTHORITY).
	Consent *Prerequisite
}

// Error is a problem in a service declaration: which service, which key, on which line, what to do.
type Error struct {
	File, Service, Key, Msg string
	// Line is the line of the settings file the key is written on (0 when unknown).
	Line int
}

// KeyPath is the settings key the error is about, such as "services.vault.urls".
func (e *Error) KeyPath() string {
	key := "services"
	if e.Service != "" {
		key += "." + e.Service
	}
	if e.Key != "" {
		key += "." + e.Key
	}
	return key
}

func (e *Error) Error() string {
	where := e.File
	if where == "" {
		where = "[tool.astrabox]"
	} else if e.Line > 0 {
		where = fmt.Sprintf("%s:%d", where, e.Line)
	}
	return fmt.Sprintf("%s: %s: %s (see docs/services.md)", where, e.KeyPath(), e.Msg)
}

// Errors returns every *Error an error returned by Parse holds, in order.
func Errors(err error) []*Error {
	var out []*Error
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range joined.Unwrap() {
			out = append(out, Errors(e)...)
		}
		return out
	}
	var e *Error
	if errors.As(err, &e) {
		out = append(out, e)
	}
	return out
}

// maxServices bounds how many services a project may declare.
const maxServices = 32

// LineFunc returns the line of the settings file a dotted key ("services.vault.urls") is written on, 0 when
// unknown.
type LineFunc func(key string) int

// Parse reads the `services` table of the settings. file names the settings file for errors; dir is the
// project directory that relative paths start from; line (nil: no lines) locates a key for errors. Every
// problem is reported: the error is an errors.Join of *Error values (see Errors).
func Parse(raw any, file, dir string, line LineFunc) ([]Spec, error) {
	p := &parser{file: file, dir: dir, line: line}
	table, ok := raw.(map[string]any)
	if !ok {
		p.add("", "", "must be a table of services, e.g. [tool.astrabox.services.vault]")
		return nil, p.err()
	}
	if len(table) > maxServices {
		p.add("", "", fmt.Sprintf("at most %d services", maxServices))
		return nil, p.err()
	}
	var out []Spec
	owner := map[string]string{}
	for _, n := range slices.Sorted(maps.Keys(table)) {
		s, ok := p.parseOne(n, table[n])
		if !ok {
			continue
		}
		for _, h := range s.Hosts {
			if prev, dup := owner[h]; dup {
				p.add(n, "urls", fmt.Sprintf("%s is already declared by service %s", h, prev))
				continue
			}
			owner[h] = n
		}
		out = append(out, s)
	}
	if err := p.err(); err != nil {
		return nil, err
	}
	return out, nil
}

// parser collects the problems of one services table.
type parser struct {
	file, dir string
	line      LineFunc
	errs      []error
}

func (p *parser) add(service, key, msg string) {
	e := &Error{File: p.file, Service: service, Key: key, Msg: msg}
	if p.line != nil {
		e.Line = p.line(e.KeyPath())
	}
	p.errs = append(p.errs, e)
}

func (p *parser) err() error { return errors.Join(p.errs...) }

// keyParser interprets one key of a service declaration into s, reporting each problem through bad.
type keyParser func(s *Spec, v any, dir string, bad func(format string, args ...any))

// serviceKeys is every key of a service declaration and its parser; docs/services.md documents each.
var serviceKeys = map[string]keyParser{
	"urls":             parseURLs,
	"run":              parseRun,
	"stubs":            parseStubs,
	"ready":            parseReady,
	"ready-timeout":    parseReadyTimeout,
	"reset":            parseReset,
	"reads":            parseReads,
	"operation-header": parseOperationHeader,
	"secret-fields":    parseSecretFields,
	"operation":        parseOperation,
	"read-operations":  parseOperations(func(s *Spec) *[]string { return &s.ReadOperations }),
	"write-operations": parseOperations(func(s *Spec) *[]string { return &s.WriteOperations }),
	"idempotency-key":  parseFields(func(s *Spec) *[]Field { return &s.IdempotencyKeys }),
	"conditional":      parseFields(func(s *Spec) *[]Field { return &s.Conditions }),
	"resource":         parseFields(func(s *Spec) *[]Field { return &s.Resource }),
	"consent":          parseConsent,
}

// parseOne reads one service; ok is false when it had a problem (already recorded).
func (p *parser) parseOne(name string, raw any) (Spec, bool) {
	s := Spec{Name: name, Dir: p.dir, Ready: "/", ReadyTimeout: 10 * time.Second, Reset: ResetRequest}
	before := len(p.errs)
	if !validName(name) {
		p.add(name, "", "a service name is letters, digits, - and _")
		return s, false
	}
	t, ok := raw.(map[string]any)
	if !ok {
		p.add(name, "", "must be a table with urls and one of run or stubs")
		return s, false
	}
	for _, k := range slices.Sorted(maps.Keys(t)) {
		parse, known := serviceKeys[k]
		if !known {
			p.add(name, k, "unknown key; the keys are urls, run, stubs, ready, ready-timeout, reset, reads, operation-header, secret-fields, operation, read-operations, write-operations, idempotency-key, conditional, resource, consent")
			continue
		}
		parse(&s, t[k], p.dir, func(format string, args ...any) { p.add(name, k, fmt.Sprintf(format, args...)) })
	}
	if len(p.errs) > before {
		return s, false
	}
	switch {
	case len(s.URLs) == 0:
		p.add(name, "urls", "is required: the production base URLs your provider calls")
	case s.Run == "" && s.Stubs == "":
		p.add(name, "", "needs run (your own fake) or stubs (WireMock mappings)")
	case s.Run != "" && s.Stubs != "":
		p.add(name, "", "give run or stubs, not both")
	}
	if s.SecretFields == nil {
		s.SecretFields = DefaultSecretFields
	}
	return s, len(p.errs) == before
}

func parseURLs(s *Spec, v any, _ string, bad func(string, ...any)) {
	list, ok := strings1(v)
	if !ok || len(list) == 0 {
		bad("must be a non-empty list of base URLs such as [\"https://vault.corp.example:8200\"]")
		return
	}
	for _, u := range list {
		h, err := hostOf(u)
		if err != nil {
			bad("%v", err)
			return
		}
		s.URLs, s.Hosts = append(s.URLs, u), append(s.Hosts, h)
	}
}

func parseRun(s *Spec, v any, _ string, bad func(string, ...any)) {
	str, ok := v.(string)
	switch {
	case !ok || strings.TrimSpace(str) == "":
		bad("must be the command that starts your fake, with {port} where the port goes")
	case !strings.Contains(str, "{port}"):
		bad("must contain {port}: the kit picks a free loopback port and the fake listens on it")
	default:
		s.Run = str
	}
}

func parseStubs(s *Spec, v any, dir string, bad func(string, ...any)) {
	str, ok := v.(string)
	if !ok || str == "" {
		bad("must be a directory of WireMock mappings, relative to the project")
		return
	}
	if !filepath.IsAbs(str) {
		str = filepath.Join(dir, str)
	}
	if st, err := os.Stat(str); err != nil || !st.IsDir() {
		bad("%s is not a directory", str)
		return
	}
	s.Stubs = filepath.Clean(str)
}

func parseReady(s *Spec, v any, _ string, bad func(string, ...any)) {
	str, ok := v.(string)
	if !ok || !strings.HasPrefix(str, "/") {
		bad("must be a path such as \"/health\"")
		return
	}
	s.Ready = str
}

func parseReadyTimeout(s *Spec, v any, _ string, bad func(string, ...any)) {
	secs, ok := number(v)
	if !ok || !(secs > 0 && secs <= 300) { // written so that nan is refused too
		bad("must be a number of seconds from 0 to 300")
		return
	}
	if err := seconds.Check(secs); err != nil {
		bad("%v", err)
		return
	}
	s.ReadyTimeout = seconds.Duration(secs)
}

func parseReset(s *Spec, v any, _ string, bad func(string, ...any)) {
	str, _ := v.(string)
	switch ResetMode(str) {
	case ResetRequest, ResetRestart, ResetNone:
		s.Reset = ResetMode(str)
	default:
		bad("must be \"request\", \"restart\" or \"none\"")
	}
}

func parseReads(s *Spec, v any, _ string, bad func(string, ...any)) {
	list, ok := strings1(v)
	if !ok {
		bad("must be a list such as [\"POST /v1/search\"]")
		return
	}
	for _, r := range list {
		method, path, found := strings.Cut(strings.TrimSpace(r), " ")
		if !found || !strings.HasPrefix(path, "/") {
			bad("%q must be \"METHOD /path-prefix\"", r)
			return
		}
		s.Reads = append(s.Reads, egress.Route{Method: strings.ToUpper(method), PathPrefix: path})
	}
}

func parseOperationHeader(s *Spec, v any, _ string, bad func(string, ...any)) {
	str, ok := v.(string)
	if !ok || str == "" {
		bad("must be a header name")
		return
	}
	s.OperationHeader = str
}

func parseSecretFields(s *Spec, v any, _ string, bad func(string, ...any)) {
	list, ok := strings1(v)
	if !ok {
		bad("must be a list of JSON field names or pointers")
		return
	}
	s.SecretFields = list
}

func parseOperation(s *Spec, v any, _ string, bad func(string, ...any)) {
	str, ok := v.(string)
	if !ok {
		bad("must be where requests name their operation, such as \"header X-Operation\" or \"body /method\"")
		return
	}
	f, err := ParseField(str)
	if err != nil {
		bad("%v", err)
		return
	}
	s.Operation = &f
}

// parseOperations reads a list of operation patterns (a name, or a prefix ending in *) into the list dst
// names.
func parseOperations(dst func(*Spec) *[]string) keyParser {
	return func(s *Spec, v any, _ string, bad func(string, ...any)) {
		list, ok := strings1(v)
		if !ok {
			bad("must be a list of operation names or prefixes ending in *, such as [\"Get*\", \"search\"]")
			return
		}
		for _, p := range list {
			if strings.TrimSpace(p) == "" || strings.Count(p, "*") > 1 || strings.Contains(strings.TrimSuffix(p, "*"), "*") {
				bad("%q must be an operation name, or a prefix ending in *", p)
				return
			}
		}
		*dst(s) = list
	}
}

// parseFields reads a list of request fields ("header NAME", "query NAME", "body NAME") into the list dst
// names; a single string is a list of one.
func parseFields(dst func(*Spec) *[]Field) keyParser {
	return func(s *Spec, v any, _ string, bad func(string, ...any)) {
		if str, ok := v.(string); ok {
			v = []any{str}
		}
		list, ok := strings1(v)
		if !ok || len(list) == 0 {
			bad("must be a list of request fields such as [\"header X-Request-Id\", \"body ClientToken\", \"query token\"]")
			return
		}
		var out []Field
		for _, raw := range list {
			f, err := ParseField(raw)
			if err != nil {
				bad("%v", err)
				return
			}
			out = append(out, f)
		}
		*dst(s) = out
	}
}

func hostOf(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return "", fmt.Errorf("%q is not an http:// or https:// base URL", raw)
	}
	if u.User != nil {
		return "", fmt.Errorf("%q carries credentials: declare the URL without them", raw)
	}
	host := strings.ToLower(u.Hostname())
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() || host == "localhost" {
		return "", fmt.Errorf("%q is a loopback address: declare the production URL your provider calls", raw)
	}
	return net.JoinHostPort(host, port), nil
}

func validName(n string) bool {
	if n == "" || len(n) > 64 {
		return false
	}
	for _, c := range n {
		if !(c == '-' || c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

func strings1(v any) ([]string, bool) {
	switch t := v.(type) {
	case []string:
		return t, true
	case []any:
		out := make([]string, 0, len(t))
		for _, e := range t {
			s, ok := e.(string)
			if !ok {
				return nil, false
			}
			out = append(out, s)
		}
		return out, true
	}
	return nil, false
}

func number(v any) (float64, bool) {
	switch t := v.(type) {
	case int64:
		return float64(t), true
	case float64:
		return t, t == t && t < 1e9
	}
	return 0, false
}
