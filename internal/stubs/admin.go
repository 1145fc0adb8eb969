package stubs

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// AdminPrefix is the path prefix WireMock reserves for its admin API; stubs never answer under it.
const AdminPrefix = "/__admin/"

// SetState moves a scenario to a state, as WireMock's `PUT /__admin/scenarios/{name}/state` does: the state
// must be Started or one a mapping of the scenario requires or sets. An unknown scenario or state is an
// error.
func (s *Set) SetState(scenario, state string) error {
	states, known := s.scenarioStates(scenario)
	if !known {
		return fmt.Errorf("scenario %q does not exist: no mapping names it in scenarioName", scenario)
	}
	if !states[state] {
		return fmt.Errorf("state %q is not a state of scenario %q (its mappings use %s)", state, scenario, strings.Join(slices.Sorted(maps.Keys(states)), ", "))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.states[scenario] = state
	return nil
}

// scenarioStates are the states a scenario's mappings name, Started included; known is false when no
// mapping is in the scenario.
func (s *Set) scenarioStates(scenario string) (map[string]bool, bool) {
	out := map[string]bool{StartedState: true}
	known := false
	for _, m := range s.mappings {
		if m.ScenarioName != scenario {
			continue
		}
		known = true
		for _, st := range []string{m.RequiredScenarioState, m.NewScenarioState} {
			if st != "" {
				out[st] = true
			}
		}
	}
	return out, known
}

// serveAdmin answers the part of WireMock's admin API the kit implements: setting (or, with no body,
// resetting) one scenario's state. Every other admin request is 404, never a stub's answer.
func (s *Set) serveAdmin(w http.ResponseWriter, hr *http.Request, body []byte) {
	rest := strings.TrimPrefix(hr.URL.EscapedPath(), AdminPrefix)
	name, ok := strings.CutPrefix(rest, "scenarios/")
	if ok {
		name, ok = strings.CutSuffix(name, "/state")
	}
	if ok {
		name, ok = unescape(name)
	}
	if !ok || name == "" || strings.Contains(name, "/") {
		adminError(w, http.StatusNotFound, "the kit's stubs implement only PUT /__admin/scenarios/{name}/state of WireMock's admin API")
		return
	}
	if hr.Method != http.MethodPut {
		w.Header().Set("Allow", http.MethodPut)
		adminError(w, http.StatusMethodNotAllowed, "set a scenario's state with PUT")
		return
	}
	state := StartedState // WireMock: an empty body resets the scenario
	if len(strings.TrimSpace(string(body))) > 0 {
		var doc struct {
			State *string `json:"state"`
		}
		if err := json.Unmarshal(body, &doc); err != nil || doc.State == nil {
			adminError(w, http.StatusBadRequest, `the body must be {"state": "NAME"} (or empty to reset the scenario)`)
			return
		}
		state = *doc.State
	}
	if _, known := s.scenarioStates(name); !known {
		adminError(w, http.StatusNotFound, fmt.Sprintf("Scenario %s does not exist", name))
		return
	}
	if err := s.SetState(name, state); err != nil {
		// The scenario exists, so the state is not one of its own: WireMock 3 answers 422.
		adminError(w, http.StatusUnprocessableEntity, err.Error())
		return
	}
	// WireMock 3 answers a moved (or reset) scenario with an empty JSON object.
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", "2")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte("{}"))
}

func unescape(s string) (string, bool) {
	u, err := url.PathUnescape(s)
	return u, err == nil
}

// adminError answers in WireMock's error shape: {"errors": [{"title": ...}]}.
func adminError(w http.ResponseWriter, status int, title string) {
	body, _ := json.Marshal(map[string]any{"errors": []map[string]string{{"title": title}}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
