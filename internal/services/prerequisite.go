package services

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"time"
)

// The kit's prerequisite states, as scenarios name them (a principal's consent).
const (
	PrerequisiteGranted = "granted"
	PrerequisitePending = "pending"
)

// PrerequisiteForm is how a service's prerequisite state is moved.
type PrerequisiteForm string

// The forms of a prerequisite declaration.
const (
	// FormControl is a control request of the author's choosing, sent to the stand-in.
	FormControl PrerequisiteForm = "control"
	// FormScenario moves a WireMock scenario's state (PUT /__admin/scenarios/{name}/state), which the kit's
	// stubs and a real WireMock both answer.
	FormScenario PrerequisiteForm = "scenario"
)

// ScenarioStatePath is WireMock's admin request that sets one scenario's state; %s is the escaped scenario
// name.
const ScenarioStatePath = "/__admin/scenarios/%s/state"

// Prerequisite is how the suite moves a principal's prerequisite (consent) at a declared service, as it moves
// it at the deployment double's identity service: a control request the kit sends straight to the stand-in,
// never through the provider.
type Prerequisite struct {
	Form PrerequisiteForm
	// Method and Path are the control request of FormControl; {principal} and {state} in Path are replaced
	// (URL-escaped).
	Method, Path string
	// Body is the control request's body of FormControl ("" for none); {principal} and {state} are replaced
	// (JSON-escaped when the body is JSON, as is otherwise).
	Body string
	// Scenario is the WireMock scenario name of FormScenario; {principal} is replaced.
	Scenario string
	// States maps the kit's states (granted, pending) to the service's words; a state not in it is sent as is.
	States map[string]string
}

// Control is a control request to send to a stand-in.
type Control struct {
	Method string
	// Path is the escaped path, with any query.
	Path string
	Body []byte
}

func (c Control) String() string { return c.Method + " " + c.Path }

// Word is the service's word for a kit state.
func (p *Prerequisite) Word(state string) string {
	if w, ok := p.States[state]; ok {
		return w
	}
	return state
}

// Control returns the request that moves principal's prerequisite to state (granted or pending).
func (p *Prerequisite) Control(principal, state string) Control {
	word := p.Word(state)
	if p.Form == FormScenario {
		name := strings.ReplaceAll(p.Scenario, "{principal}", principal)
		body, _ := json.Marshal(map[string]string{"state": word})
		return Control{Method: "PUT", Path: fmt.Sprintf(ScenarioStatePath, url.PathEscape(name)), Body: body}
	}
	path := strings.NewReplacer("{principal}", url.PathEscape(principal), "{state}", url.PathEscape(word)).Replace(p.Path)
	var body []byte
	if p.Body != "" {
		esc := func(s string) string { return s }
		if json.Valid([]byte(strings.NewReplacer("{principal}", "p", "{state}", "s").Replace(p.Body))) {
			esc = func(s string) string { b, _ := json.Marshal(s); return string(b[1 : len(b)-1]) }
		}
		body = []byte(strings.NewReplacer("{principal}", esc(principal), "{state}", esc(word)).Replace(p.Body))
	}
	return Control{Method: p.Method, Path: path, Body: body}
}

// prerequisiteKeys are the keys of a consent declaration.
var prerequisiteKeys = []string{"body", "control", "scenario", "states"}

// parseConsent reads `consent = { control = "PUT /path/{principal}", body = '...', states = {...} }` or
// `consent = { scenario = "consent-{principal}", states = {...} }`.
func parseConsent(s *Spec, v any, _ string, bad func(string, ...any)) {
	t, ok := v.(map[string]any)
	if !ok {
		bad("must be a table such as { control = \"PUT /__fake/consents/{principal}\", body = '{\"state\": \"{state}\"}' } or { scenario = \"consent-{principal}\", states = { granted = \"Started\", pending = \"awaiting-consent\" } }")
		return
	}
	for _, k := range slices.Sorted(maps.Keys(t)) {
		if !slices.Contains(prerequisiteKeys, k) {
			bad("unknown key %q; the keys are control, body, scenario and states", k)
			return
		}
	}
	p := &Prerequisite{}
	str := func(k string) (string, bool) {
		raw, present := t[k]
		if !present {
			return "", true
		}
		s, ok := raw.(string)
		if !ok || strings.TrimSpace(s) == "" {
			bad("%s must be a non-empty string", k)
			return "", false
		}
		return s, true
	}
	control, ok1 := str("control")
	body, ok2 := str("body")
	scenario, ok3 := str("scenario")
	if !ok1 || !ok2 || !ok3 {
		return
	}
	switch {
	case control == "" && scenario == "":
		bad("needs control (a request to your fake, such as \"PUT /__fake/consents/{principal}\") or scenario (a WireMock scenario name such as \"consent-{principal}\")")
		return
	case control != "" && scenario != "":
		bad("give control or scenario, not both")
		return
	case scenario != "":
		if body != "" {
			bad("body goes with control; a scenario's state is set with WireMock's own request")
			return
		}
		if !strings.Contains(scenario, "{principal}") {
			bad("scenario %q must contain {principal}: each principal's prerequisite is its own scenario", scenario)
			return
		}
		if hasUnknownPlaceholder(scenario, "{principal}") {
			bad("scenario %q may use only {principal}", scenario)
			return
		}
		p.Form, p.Scenario = FormScenario, scenario
	default:
		method, path, found := strings.Cut(strings.TrimSpace(control), " ")
		path = strings.TrimSpace(path)
		if !found || !validMethod(method) || !strings.HasPrefix(path, "/") {
			bad("control %q must be \"METHOD /path\", such as \"PUT /__fake/consents/{principal}\"", control)
			return
		}
		if hasUnknownPlaceholder(path+body, "{principal}", "{state}") {
			bad("control and body may use only {principal} and {state}")
			return
		}
		if !strings.Contains(path+body, "{principal}") || !strings.Contains(path+body, "{state}") {
			bad("control or body must name {principal} and {state}, so that the request says whose prerequisite moves to which state")
			return
		}
		p.Form, p.Method, p.Path, p.Body = FormControl, strings.ToUpper(method), path, body
	}
	if raw, present := t["states"]; present {
		st, ok := raw.(map[string]any)
		if !ok {
			bad("states must be a table such as { granted = \"Started\", pending = \"awaiting-consent\" }")
			return
		}
		p.States = map[string]string{}
		for _, k := range slices.Sorted(maps.Keys(st)) {
			w, ok := st[k].(string)
			switch {
			case k != PrerequisiteGranted && k != PrerequisitePending:
				bad("states.%s: the states are granted and pending", k)
				return
			case !ok || w == "" || strings.ContainsAny(w, "\"\\\x00\r\n"):
				bad("states.%s must be the service's word for that state (a non-empty string without quotes)", k)
				return
			}
			p.States[k] = w
		}
		if len(p.States) == 2 && p.States[PrerequisiteGranted] == p.States[PrerequisitePending] {
			bad("states: granted and pending must be different words")
			return
		}
	}
	s.Consent = p
}

func validMethod(m string) bool {
	if m == "" || len(m) > 16 {
		return false
	}
	for _, c := range m {
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z') {
			return false
		}
	}
	return true
}

// hasUnknownPlaceholder reports a {name} in s (letters, digits, - and _ between braces) that is not one of
// allowed; JSON braces are not placeholders.
func hasUnknownPlaceholder(s string, allowed ...string) bool {
	for _, a := range allowed {
		s = strings.ReplaceAll(s, a, "")
	}
	for i := strings.IndexByte(s, '{'); i >= 0; i = strings.IndexByte(s, '{') {
		s = s[i+1:]
		end := strings.IndexByte(s, '}')
		if end > 0 && isIdent(s[:end]) {
			return true
		}
	}
	return false
}

func isIdent(s string) bool {
	for _, c := range s {
		if !(c == '_' || c == '-' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// ControlError is a control request a stand-in did not accept: the suite could not move the prerequisite,
// so nothing it would judge about that prerequisite is known.
type ControlError struct {
	Service   string
	Principal string
	State     string
	Request   Control
	// Status is the stand-in's answer (0: it did not answer); Body the start of what it said.
	Status int
	Body   string
}

func (e *ControlError) Error() string {
	answer := fmt.Sprintf("answered %d", e.Status)
	if e.Status == 0 {
		answer = "got no answer"
	}
	if e.Body != "" {
		answer += ": " + e.Body
	}
	return fmt.Sprintf("service %s: the control request that moves consent of %s to %s (%s) %s; make the stand-in accept it, or fix consent in [tool.astrabox.services.%s] (see docs/services.md)",
		e.Service, e.Principal, e.State, e.Request, answer, e.Service)
}

// controlTimeout bounds one control request.
const controlTimeout = 10 * time.Second

// SendControl moves principal's prerequisite to state at a service's stand-in: the control request goes
// straight to the stand-in's handler (never through the provider, the egress proxy or the double, so it is
// not one of the provider's requests), addressed to the service's first production host. Any answer but a
// 2xx is a *ControlError.
func SendControl(ctx context.Context, s Spec, si StandIn, principal, state string) error {
	if s.Consent == nil {
		return nil
	}
	c := s.Consent.Control(principal, state)
	fail := func(status int, body string) error {
		return &ControlError{Service: s.Name, Principal: principal, State: state, Request: c, Status: status, Body: body}
	}
	base, err := url.Parse(s.URLs[0])
	if err != nil {
		return fail(0, err.Error())
	}
	target := base.Scheme + "://" + base.Host + c.Path
	ctx, cancel := context.WithTimeout(ctx, controlTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, c.Method, target, bytes.NewReader(c.Body))
	if err != nil {
		return fail(0, err.Error())
	}
	if len(c.Body) > 0 && json.Valid(c.Body) {
		req.Header.Set("Content-Type", "application/json")
	}
	rec := httptest.NewRecorder()
	si.Handler().ServeHTTP(rec, req)
	if rec.Code >= 200 && rec.Code < 300 {
		return nil
	}
	body := strings.TrimSpace(rec.Body.String())
	if len(body) > 300 {
		body = body[:300] + "..."
	}
	if rec.Code == http.StatusBadGateway && strings.HasPrefix(body, "astrabox: the fake") {
		return fail(0, body)
	}
	return fail(rec.Code, body)
}
