package stubs

import (
	"strings"
	"testing"
)

// TestAdminSetsScenarioState: PUT /__admin/scenarios/{name}/state moves a scenario as WireMock 3 does (the
// stubs then answer from the new state), an empty body resets it to Started, and an unknown scenario or state
// or another admin request is refused, never answered by a stub.
func TestAdminSetsScenarioState(t *testing.T) {
	set, srv := serve(t)
	if _, body, _ := do(t, srv, "GET", "/todo/items", "", nil); strings.Contains(body, "Cancel newspaper") {
		t.Fatalf("starting list = %s", body)
	}
	status, body, _ := do(t, srv, "PUT", "/__admin/scenarios/To%20do%20list/state", `{"state": "Cancel newspaper item added"}`, nil)
	if status != 200 || body != "{}" {
		t.Fatalf("set state: %d %s", status, body)
	}
	if got := set.State("To do list"); got != "Cancel newspaper item added" {
		t.Errorf("state = %q", got)
	}
	if _, body, _ := do(t, srv, "GET", "/todo/items", "", nil); !strings.Contains(body, "Cancel newspaper subscription") {
		t.Errorf("list after the state moved = %s", body)
	}
	if status, body, _ := do(t, srv, "PUT", "/__admin/scenarios/To%20do%20list/state", "", nil); status != 200 || set.State("To do list") != StartedState {
		t.Errorf("reset: %d %s, state %q", status, body, set.State("To do list"))
	}
	refused := []struct{ method, path, body, want string }{
		{"PUT", "/__admin/scenarios/Nope/state", `{"state": "Started"}`, "Scenario Nope does not exist"},
		{"PUT", "/__admin/scenarios/To%20do%20list/state", `{"state": "Eaten"}`, `state \"Eaten\" is not a state of scenario`},
		{"PUT", "/__admin/scenarios/To%20do%20list/state", `{"status": "Started"}`, `the body must be {\"state\"`},
		{"POST", "/__admin/scenarios/To%20do%20list/state", `{"state": "Started"}`, "set a scenario's state with PUT"},
		{"GET", "/__admin/mappings", "", "implement only PUT /__admin/scenarios"},
	}
	for _, r := range refused {
		status, body, _ := do(t, srv, r.method, r.path, r.body, nil)
		if status < 400 || !strings.Contains(body, r.want) || !strings.HasPrefix(body, `{"errors":[{"title":`) {
			t.Errorf("%s %s %s: %d %s, want an error with %q", r.method, r.path, r.body, status, body, r.want)
		}
	}
	if got := set.State("To do list"); got != StartedState {
		t.Errorf("a refused request moved the state to %q", got)
	}
}

// TestAdminAnswersAsWireMock3: the kit answers the scenario-state request with WireMock 3.13's statuses and
// shapes (as TestScenarioParityWithWireMock sees them): 200 with the JSON body {} when the state moved (or
// was reset), 422 for a state the scenario does not have, 404 for a scenario no mapping names.
func TestAdminAnswersAsWireMock3(t *testing.T) {
	_, srv := serve(t)
	for _, body := range []string{`{"state": "Cancel newspaper item added"}`, ""} {
		status, got, h := do(t, srv, "PUT", "/__admin/scenarios/To%20do%20list/state", body, nil)
		if status != 200 || got != "{}" || h.Get("Content-Type") != "application/json" {
			t.Errorf("PUT state %q: %d %q Content-Type=%q, want 200 {} application/json", body, status, got, h.Get("Content-Type"))
		}
	}
	if status, got, _ := do(t, srv, "PUT", "/__admin/scenarios/To%20do%20list/state", `{"state": "Eaten"}`, nil); status != 422 {
		t.Errorf("unknown state: %d %s, want 422", status, got)
	}
	if status, got, _ := do(t, srv, "PUT", "/__admin/scenarios/Nope/state", `{"state": "Started"}`, nil); status != 404 {
		t.Errorf("unknown scenario: %d %s, want 404", status, got)
	}
}
