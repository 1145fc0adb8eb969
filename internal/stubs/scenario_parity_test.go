package stubs

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
)

// adatumStubs are the identity provider stubs of testdata/providers/correct/adatum_idp: one scenario per
// subject (agent-tools-<subject>), whose Started state answers the grant lookup 200 and whose
// consent-required state answers it 403, as the suite moves them (consent = { scenario = ... } in its
// pyproject.toml).
const adatumStubs = "../../testdata/providers/correct/adatum_idp/tests/stubs/idp"

// scenarioStep is one request of the scenario parity test: a stub request, or WireMock's admin request that
// moves a scenario (admin: error answers are compared by status and shape, the titles being the kit's own).
type scenarioStep struct {
	parityRequest
	admin bool
}

// grantOf looks up a subject's agent-tools grant, as Adatum's provider does.
func grantOf(subject string) scenarioStep {
	return scenarioStep{parityRequest: parityRequest{method: "GET", target: "/v2/subjects/" + subject + "/grants/agent-tools"}}
}

// moveScenario sets a subject's scenario with WireMock's admin request, as the suite's control request does
// (services.Prerequisite.Control); an empty state sends no body, which resets the scenario.
func moveScenario(subject, state string) scenarioStep {
	pr := parityRequest{method: "PUT", target: "/__admin/scenarios/agent-tools-" + subject + "/state"}
	if state != "" {
		pr.body = `{"state": "` + state + `"}`
		pr.header = map[string]string{"Content-Type": "application/json"}
	}
	return scenarioStep{parityRequest: pr, admin: true}
}

// scenarioSteps move the subjects' scenarios as the default suite does (pending, granted again, another
// subject untouched) and look up grants in between, with the refusals a wrong declaration would meet.
var scenarioSteps = []scenarioStep{
	grantOf("alice"),
	moveScenario("alice", "consent-required"),
	grantOf("alice"),
	grantOf("bob"),
	{parityRequest: parityRequest{method: "GET", target: "/v2/subjects/alice/consent-requests/agent-tools"}},
	moveScenario("dave", "consent-required"),
	grantOf("dave"),
	moveScenario("alice", "Started"),
	grantOf("alice"),
	grantOf("dave"),
	moveScenario("dave", ""),
	grantOf("dave"),
	moveScenario("carol", "awaiting-consent"), // not a state of carol's scenario
	grantOf("carol"),
	moveScenario("erin", "Started"), // no mapping names this scenario
}

// TestScenarioParityWithWireMock loads Adatum's identity provider stubs into the real WireMock and into the
// kit, moves the subjects' scenarios with PUT /__admin/scenarios/{name}/state on both, and requires the same
// answers: every stub answer (status, body, Content-Type) after each move, and each move's own answer (status
// and Content-Type; the body when it succeeded, WireMock's {"errors": [...]} shape when it did not).
func TestScenarioParityWithWireMock(t *testing.T) {
	if testing.Short() {
		t.Skip("starts WireMock (java)")
	}
	root, err := filepath.Abs(adatumStubs)
	if err != nil {
		t.Fatal(err)
	}
	wm := startWireMock(t, root)
	set, err := Load(root)
	if err != nil {
		t.Fatal(err)
	}
	kit := httptest.NewServer(set)
	defer kit.Close()
	statuses := map[int]bool{}
	for i, step := range scenarioSteps {
		name := step.method + " " + step.target + " " + step.body
		want := send(t, wm, step.parityRequest)
		got := send(t, kit.URL, step.parityRequest)
		statuses[want.Status] = true
		if step.admin && want.Status >= 400 {
			if got.Status != want.Status || !errorShaped(got.Body) || !errorShaped(want.Body) {
				t.Errorf("step %d, %s: the kit answered %s, WireMock %s", i+1, name, got, want)
			}
			continue
		}
		if got.String() != want.String() {
			t.Errorf("step %d, %s: the kit answered %s, WireMock %s", i+1, name, got, want)
		}
	}
	// The steps reach both of a scenario's answers and each refusal of a move.
	for _, s := range []int{http.StatusOK, http.StatusForbidden, http.StatusUnprocessableEntity, http.StatusNotFound} {
		if !statuses[s] {
			t.Errorf("no step was answered %d by WireMock", s)
		}
	}
}

// errorShaped reports an answer in WireMock's admin error shape, {"errors": [{"title": "..."}, ...]}.
func errorShaped(body string) bool {
	var doc struct {
		Errors []struct {
			Title string `json:"title"`
		} `json:"errors"`
	}
	return json.Unmarshal([]byte(body), &doc) == nil && len(doc.Errors) > 0 && strings.TrimSpace(doc.Errors[0].Title) != ""
}
