package conformance

import (
	"strings"
	"testing"

	"github.com/astrabox-dev/astrabox/internal/harness"
	"github.com/astrabox-dev/astrabox/internal/secrets"
	"github.com/astrabox-dev/astrabox/internal/simulate"
)

const (
	testTokenA = "astx_wid_AAAAAAAAAAAAAAAAAAAA"
	testTokenB = "astx_wid_BBBBBBBBBBBBBBBBBBBB"
)

func leakEvidence(h *simulate.History) *Evidence {
	ev := evidenceOf(h)
	ev.Secrets.Add(testTokenA, "workload identity token of session s1")
	ev.Secrets.Add(testTokenB, "workload identity token of session s2")
	return ev
}

func TestLeakLogOneFindingPerPlace(t *testing.T) {
	b := newHist("x")
	for _, tok := range []string{testTokenA, testTokenB} {
		b.call(&simulate.CallRecord{Replica: "r1", Method: "prepare_session", Outcome: simulate.OutcomeReturned,
			Observations: harness.Observations{Logs: []harness.LogRecord{{Level: "INFO", Logger: "p", Message: "token " + tok, File: "p.py", Line: 20}}}})
	}
	b.call(&simulate.CallRecord{Replica: "r1", Method: "prepare_turn", Outcome: simulate.OutcomeReturned, Stderr: "debug " + testTokenA + "\n"})
	b.h.Events = append(b.h.Events, &simulate.Event{Kind: simulate.EventBackground, Replica: "r1",
		Background: &harness.Observations{Warnings: []harness.WarningRecord{{Category: "UserWarning", Message: "x " + testTokenB, File: "p.py", Line: 40}}}})
	fs := decideLeakLog(leakEvidence(b.h))
	if len(fs) != 3 {
		t.Fatalf("findings = %+v", fs)
	}
	for _, f := range fs {
		if strings.Contains(f.Message, testTokenA) || strings.Contains(f.Message, testTokenB) {
			t.Fatalf("a finding holds the secret: %q", f.Message)
		}
	}
	if !strings.Contains(fs[1].Message, "stderr") || !strings.Contains(fs[2].Message, "warning") {
		t.Fatalf("findings = %+v", fs)
	}
}

func TestUserActionSecretIsNotAlsoAnErrorLeak(t *testing.T) {
	url := "https://identity.example/consent?assertion=" + testTokenA
	b := newHist("x")
	b.call(&simulate.CallRecord{Replica: "r1", Method: "prepare_turn", Outcome: simulate.OutcomeRaised, Error: &harness.PyError{
		Type: "PreparationUserActionRequired", Message: "Grant consent", Repr: "PreparationUserActionRequired('Grant consent', url='" + url + "')",
		Traceback: "Traceback...\nPreparationUserActionRequired: Grant consent", UserAction: &harness.UserAction{Message: "Grant consent", Status: "pending", URL: &url}}})
	ev := leakEvidence(b.h)
	if fs := decideLeakError(ev); len(fs) != 0 {
		t.Fatalf("LEAK-ERROR reported the user action's URL: %+v", fs)
	}
	fs := decideLeakUserAction(ev)
	if len(fs) != 1 || !strings.Contains(fs[0].Message, "URL") {
		t.Fatalf("LEAK-USER-ACTION findings = %+v", fs)
	}
	b.h.Events[0].Call.Error.Traceback += "\nduring handling: " + testTokenB
	if fs := decideLeakError(leakEvidence(b.h)); len(fs) != 1 || !strings.Contains(fs[0].Message, "traceback") {
		t.Fatalf("a secret elsewhere in the traceback was missed: %+v", fs)
	}
}

func TestLeakUserActionStateOneFindingNamingTheURL(t *testing.T) {
	b := newHist("x")
	st := pendingState()
	st.UserAction = []byte(`{"message":"Grant consent","status":"pending","url":"https://identity.example/c?a=` + testTokenA + `"}`)
	st.Repr = "SessionUserActionState(ready=False, user_action=SessionUserAction(url='https://identity.example/c?a=" + testTokenA + "'))"
	b.call(&simulate.CallRecord{Replica: "r1", Method: "read_user_actions", Outcome: simulate.OutcomeReturned, Result: st})
	fs := decideLeakUserAction(leakEvidence(b.h))
	if len(fs) != 1 || !strings.Contains(fs[0].Message, "user-action URL") {
		t.Fatalf("findings = %+v", fs)
	}
	if fs := decideLeakUserAction(leakEvidence(newHist("y").h)); len(fs) != 0 {
		t.Fatalf("an empty history gave findings: %+v", fs)
	}
}

// TestHandedSecretsAreChosenByKind: what a file must never hold is what the platform handed the provider,
// chosen by each secret's kind; display origins that read alike choose nothing.
func TestHandedSecretsAreChosenByKind(t *testing.T) {
	h := &simulate.History{Secrets: []secrets.Secret{
		{Value: "wid-token-aaaaaaaa", Origin: "a token", Kind: secrets.KindWorkloadToken},
		{Value: "canary-cccccccccc", Origin: "a canary", Kind: secrets.KindConfigField},
		{Value: "credential-dddddd", Origin: "workload identity token of session s1", Kind: secrets.KindCredential},
		{Value: "service-value-eee", Origin: "configuration field secrets.x", Kind: secrets.KindServiceValue},
		{Value: "returned-ffffffff", Origin: "configuration field secrets.y"},
	}}
	set := handedSecrets(h)
	if set.Len() != 2 {
		t.Fatalf("handed %d secrets, want the token and the canary", set.Len())
	}
	for _, v := range []string{"wid-token-aaaaaaaa", "canary-cccccccccc"} {
		if len(set.FindString("x "+v+" x")) != 1 {
			t.Errorf("%s was not handed", v)
		}
	}
	for _, v := range []string{"credential-dddddd", "service-value-eee", "returned-ffffffff"} {
		if len(set.FindString("x "+v+" x")) != 0 {
			t.Errorf("%s was taken for a handed secret by its origin text", v)
		}
	}
}
