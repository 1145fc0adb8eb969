// Package services holds a provider project's declared external systems (`[tool.astrabox.services.NAME]`):
// which production base URLs each answers on, and how the kit stands it in during a run (the author's own
// fake, started on a free loopback port, or declarative WireMock-format stubs). It starts and stops fakes,
// resets them between scenarios, and turns each service into a handler for the egress proxy.
package services

import (
	"fmt"
	"maps"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/astrabox-dev/astrabox/internal/egress"
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
}

// Error is a problem in a service declaration: which service, which key, what to do.
type Error struct {
	File, Service, Key, Msg string
}

func (e *Error) Error() string {
	where := e.File
	if where == "" {
		where = "[tool.astrabox]"
	}
	key := "services." + e.Service
	if e.Key != "" {
		key += "." + e.Key
	}
	return fmt.Sprintf("%s: %s: %s (see docs/services.md)", where, key, e.Msg)
}

// maxServices bounds how many services a project may declare.
const maxServices = 32

// Parse reads the `services` table of the settings. file names the settings file for errors; dir is the
// project directory that relative paths start from.
func Parse(raw any, file, dir string) ([]Spec, error) {
	table, ok := raw.(map[string]any)
	if !ok {
		return nil, &Error{File: file, Service: "", Msg: "must be a table of services, e.g. [tool.astrabox.services.vault]"}
	}
	if len(table) > maxServices {
		return nil, &Error{File: file, Msg: fmt.Sprintf("at most %d services", maxServices)}
	}
	names := make([]string, 0, len(table))
	for n := range table {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []Spec
	owner := map[string]string{}
	for _, n := range names {
		s, err := parseOne(n, table[n], file, dir)
		if err != nil {
			return nil, err
		}
		for _, h := range s.Hosts {
			if prev, dup := owner[h]; dup {
				return nil, &Error{File: file, Service: n, Key: "urls", Msg: fmt.Sprintf("%s is already declared by service %s", h, prev)}
			}
			owner[h] = n
		}
		out = append(out, s)
	}
	return out, nil
}

func parseOne(name string, raw any, file, dir string) (Spec, error) {
	s := Spec{Name: name, Dir: dir, Ready: "/", ReadyTimeout: 10 * time.Second, Reset: ResetRequest}
	bad := func(key, format string, args ...any) error {
		return &Error{File: file, Service: name, Key: key, Msg: fmt.Sprintf(format, args...)}
	}
	if !validName(name) {
		return s, bad("", "a service name is letters, digits, - and _")
	}
	t, ok := raw.(map[string]any)
	if !ok {
		return s, bad("", "must be a table with urls and one of run or stubs")
	}
	for _, k := range slices.Sorted(maps.Keys(t)) {
		v := t[k]
		switch k {
		case "urls":
			list, ok := strings1(v)
			if !ok || len(list) == 0 {
				return s, bad(k, "must be a non-empty list of base URLs such as [\"https://vault.corp.example:8200\"]")
			}
			for _, u := range list {
				h, err := hostOf(u)
				if err != nil {
					return s, bad(k, "%v", err)
				}
				s.URLs, s.Hosts = append(s.URLs, u), append(s.Hosts, h)
			}
		case "run":
			str, ok := v.(string)
			if !ok || strings.TrimSpace(str) == "" {
				return s, bad(k, "must be the command that starts your fake, with {port} where the port goes")
			}
			if !strings.Contains(str, "{port}") {
				return s, bad(k, "must contain {port}: the kit picks a free loopback port and the fake listens on it")
			}
			s.Run = str
		case "stubs":
			str, ok := v.(string)
			if !ok || str == "" {
				return s, bad(k, "must be a directory of WireMock mappings, relative to the project")
			}
			if !filepath.IsAbs(str) {
				str = filepath.Join(dir, str)
			}
			if st, err := os.Stat(str); err != nil || !st.IsDir() {
				return s, bad(k, "%s is not a directory", str)
			}
			s.Stubs = filepath.Clean(str)
		case "ready":
			str, ok := v.(string)
			if !ok || !strings.HasPrefix(str, "/") {
				return s, bad(k, "must be a path such as \"/health\"")
			}
			s.Ready = str
		case "ready-timeout":
			secs, ok := number(v)
			if !ok || secs <= 0 || secs > 300 {
				return s, bad(k, "must be a number of seconds from 0 to 300")
			}
			s.ReadyTimeout = time.Duration(secs * float64(time.Second))
		case "reset":
			str, _ := v.(string)
			switch ResetMode(str) {
			case ResetRequest, ResetRestart, ResetNone:
				s.Reset = ResetMode(str)
			default:
				return s, bad(k, "must be \"request\", \"restart\" or \"none\"")
			}
		case "reads":
			list, ok := strings1(v)
			if !ok {
				return s, bad(k, "must be a list such as [\"POST /v1/search\"]")
			}
			for _, r := range list {
				method, path, found := strings.Cut(strings.TrimSpace(r), " ")
				if !found || !strings.HasPrefix(path, "/") {
					return s, bad(k, "%q must be \"METHOD /path-prefix\"", r)
				}
				s.Reads = append(s.Reads, egress.Route{Method: strings.ToUpper(method), PathPrefix: path})
			}
		case "operation-header":
			str, ok := v.(string)
			if !ok || str == "" {
				return s, bad(k, "must be a header name")
			}
			s.OperationHeader = str
		case "secret-fields":
			list, ok := strings1(v)
			if !ok {
				return s, bad(k, "must be a list of JSON field names or pointers")
			}
			s.SecretFields = list
		default:
			return s, bad(k, "unknown key; the keys are urls, run, stubs, ready, ready-timeout, reset, reads, operation-header, secret-fields")
		}
	}
	switch {
	case len(s.URLs) == 0:
		return s, bad("urls", "is required: the production base URLs your provider calls")
	case s.Run == "" && s.Stubs == "":
		return s, bad("", "needs run (your own fake) or stubs (WireMock mappings)")
	case s.Run != "" && s.Stubs != "":
		return s, bad("", "give run or stubs, not both")
	}
	if s.SecretFields == nil {
		s.SecretFields = DefaultSecretFields
	}
	return s, nil
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
