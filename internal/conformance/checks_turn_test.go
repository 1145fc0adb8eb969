package conformance

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/astrabox-dev/astrabox/internal/harness"
	"github.com/astrabox-dev/astrabox/internal/simulate"
)

// turnCall is a prepare_turn that returned one token.json file.
func turnCall(key, replica, attempt string, refresh bool, content string, validity string) *simulate.CallRecord {
	return &simulate.CallRecord{
		Key: key, Replica: replica, Method: "prepare_turn", Outcome: simulate.OutcomeReturned,
		Ctx: simulate.CallContext{Session: "s1", Principal: "alice", Attempt: attempt, Refresh: refresh},
		Result: &harness.Result{Type: simulate.KindMaterials, Files: []harness.MaterialFile{{Name: "token.json", Content: []byte(content)}},
			TurnValiditySeconds: json.RawMessage(validity)},
	}
}

func write(call, method, path, body string, order int64) simulate.Request {
	return simulate.Request{Call: call, Method: method, Path: path, Applied: true, ApplyOrder: order, Status: 201, Body: json.RawMessage(body)}
}

func TestTurnIdempotentAcceptsRepeatsAndRefreshedMaterial(t *testing.T) {
	h := fakeHistory([]*simulate.CallRecord{
		turnCall("r1#1", "r1", "t1", false, "material-one", "300"),
		turnCall("r2#1", "r2", "t1", false, "material-one", "300"),
		turnCall("r1#2", "r1", "t1", true, "material-two", "300"),
		turnCall("r3#1", "r3", "t1", false, "material-two", "300"),
	},
		write("r1#1", "POST", "/v1/credentials", `{"principal_id":"alice"}`, 1),
		write("r1#1", "PUT", "/v1/records/turns/s1/t1", `{"value":1}`, 2),
		// An exact repeat of an earlier write is idempotent.
		write("r2#1", "PUT", "/v1/records/turns/s1/t1", `{"value":1}`, 3),
		write("r1#2", "POST", "/v1/credentials", `{"principal_id":"alice"}`, 4),
	)
	if f := decideTurnIdempotent(evidenceOf(h)); len(f) != 0 {
		t.Fatalf("expected no finding, got %+v", f)
	}
}

func TestTurnIdempotentFindsNewMaterialAndNewWrites(t *testing.T) {
	h := fakeHistory([]*simulate.CallRecord{
		turnCall("r1#1", "r1", "t1", false, "material-one", "300"),
		turnCall("r2#1", "r2", "t1", false, "material-new", "300"),
	},
		write("r1#1", "POST", "/v1/credentials", `{"principal_id":"alice"}`, 1),
		// The same POST again issues a second credential: not an idempotent repeat.
		write("r2#1", "POST", "/v1/credentials", `{"principal_id":"alice"}`, 2),
	)
	f := decideTurnIdempotent(evidenceOf(h))
	if len(f) != 2 {
		t.Fatalf("expected a material and a write finding, got %+v", f)
	}
	if !strings.Contains(f[0].Message, "different bytes") || !strings.Contains(f[1].Message, "POST /v1/credentials") {
		t.Fatalf("unexpected messages: %q / %q", f[0].Message, f[1].Message)
	}
}

func TestTurnIdempotentIgnoresRetryAfterFailedFirstCall(t *testing.T) {
	first := turnCall("r1#1", "r1", "t1", false, "", "null")
	first.Outcome, first.Result = simulate.OutcomeCancelled, nil
	h := fakeHistory([]*simulate.CallRecord{first, turnCall("r2#1", "r2", "t1", false, "material-one", "300")},
		write("r2#1", "POST", "/v1/credentials", `{"principal_id":"alice"}`, 1))
	if f := decideTurnIdempotent(evidenceOf(h)); len(f) != 0 {
		t.Fatalf("a retry after a call that delivered nothing may issue material; got %+v", f)
	}
}

func TestTurnValidityFresh(t *testing.T) {
	stale := fakeHistory([]*simulate.CallRecord{
		turnCall("r1#1", "r1", "t1", false, "material-one", "300"),
		turnCall("r1#2", "r1", "t1", true, "material-one", "300"),
	})
	if f := decideTurnValidityFresh(evidenceOf(stale)); len(f) != 1 || !strings.Contains(f[0].Message, "byte for byte") {
		t.Fatalf("expected one stale-refresh finding, got %+v", f)
	}
	missing := fakeHistory([]*simulate.CallRecord{
		turnCall("r1#1", "r1", "t1", false, "material-one", "300"),
		turnCall("r1#2", "r1", "t1", true, "material-two", "null"),
	})
	if f := decideTurnValidityFresh(evidenceOf(missing)); len(f) != 1 || !strings.Contains(f[0].Message, "no turn_validity_seconds") {
		t.Fatalf("expected one missing-validity finding, got %+v", f)
	}
	invalid := fakeHistory([]*simulate.CallRecord{turnCall("r1#1", "r1", "t1", false, "material-one", `"inf"`)})
	if f := decideTurnValidityFresh(evidenceOf(invalid)); len(f) != 1 || !strings.Contains(f[0].Message, "positive, finite") {
		t.Fatalf("expected one invalid-validity finding, got %+v", f)
	}
	good := fakeHistory([]*simulate.CallRecord{
		turnCall("r1#1", "r1", "t1", false, "material-one", "null"),
		turnCall("r1#2", "r1", "t2", false, "material-one", "300"),
		turnCall("r1#3", "r1", "t2", true, "material-two", "240.5"),
	})
	if f := decideTurnValidityFresh(evidenceOf(good)); len(f) != 0 {
		t.Fatalf("expected no finding, got %+v", f)
	}
}

func TestTurnFilesOnlyUsesLatestSessionDelivery(t *testing.T) {
	sess := &simulate.CallRecord{Key: "r1#1", Replica: "r1", Method: "prepare_session", Outcome: simulate.OutcomeReturned,
		Ctx:    simulate.CallContext{Session: "s1", Principal: "alice"},
		Result: &harness.Result{Type: simulate.KindMaterials, Files: []harness.MaterialFile{{Name: "token.json", Content: []byte("x")}}}}
	h := fakeHistory([]*simulate.CallRecord{sess})
	h.Events = append(h.Events, &simulate.Event{Seq: 10, Step: 1, Kind: simulate.EventDelivery,
		Delivery: &simulate.Delivery{Session: "s1", Name: "token.json", From: "r1#1"}})
	ok := turnCall("r1#2", "r1", "t1", false, "material-one", "300")
	extra := turnCall("r1#3", "r1", "t2", false, "material-one", "300")
	extra.Result.Files = append(extra.Result.Files, harness.MaterialFile{Name: "other.json", Content: []byte("y")})
	env := turnCall("r1#4", "r1", "t3", false, "material-one", "300")
	env.Result.Environment = map[string]string{"TOKEN_FILE": "/x/token.json"}
	for i, c := range []*simulate.CallRecord{ok, extra, env} {
		h.Events = append(h.Events, &simulate.Event{Seq: 20 + i, Step: 2 + i, Kind: simulate.EventCall, Call: c})
	}
	f := decideTurnFilesOnly(evidenceOf(h))
	if len(f) != 2 || !strings.Contains(f[0].Message, `"other.json"`) || !strings.Contains(f[1].Message, "TOKEN_FILE") {
		t.Fatalf("expected an undelivered-name and an environment finding, got %+v", f)
	}
}

func TestTurnWithinDeadline(t *testing.T) {
	over := turnCall("r1#1", "r1", "t1", false, "material-one", "300")
	over.Outcome, over.CancelSent = simulate.OutcomeOverran, true
	cancelled := &simulate.CallRecord{Key: "r1#2", Replica: "r1", Method: "prepare_turn", Outcome: simulate.OutcomeCancelled, CancelSent: true, Fault: simulate.FaultTimeout}
	lost := &simulate.CallRecord{Key: "r1#3", Replica: "r1", Method: "prepare_turn", Outcome: simulate.OutcomeHostLoss}
	hung := &simulate.CallRecord{Key: "r2#1", Replica: "r2", Method: "prepare_turn", Outcome: simulate.OutcomeDied, ProcessKind: string(harness.KindHung)}
	if f := decideTurnWithinDeadline(evidenceOf(fakeHistory([]*simulate.CallRecord{cancelled, lost}))); len(f) != 0 {
		t.Fatalf("a call cancelled by a fault and a host loss keep the clause; got %+v", f)
	}
	// Liveness: with no fault injected, a turn cancelled at its deadline fails.
	slow := &simulate.CallRecord{Key: "r1#4", Replica: "r1", Method: "prepare_turn", Outcome: simulate.OutcomeCancelled, CancelSent: true, DeadlineS: 2}
	if f := decideTurnWithinDeadline(evidenceOf(fakeHistory([]*simulate.CallRecord{slow}))); len(f) != 1 || !strings.Contains(f[0].Message, "no fault injected") {
		t.Fatalf("a fault-free turn cancelled at its deadline must fail; got %+v", f)
	}
	// A reply that may have crossed the cancel on the wire is only a warning, and nothing at all when the
	// provider keeps the platform's default prepare_turn.
	ev := evidenceOf(fakeHistory([]*simulate.CallRecord{over, cancelled}))
	f := decideTurnWithinDeadline(ev)
	if len(f) != 1 || !f[0].Warning {
		t.Fatalf("expected one warning, got %+v", f)
	}
	ev.Load = &harness.LoadInfo{Methods: map[string]harness.MethodInfo{"prepare_turn": {Overridden: false}}}
	if f := decideTurnWithinDeadline(ev); len(f) != 0 {
		t.Fatalf("the default prepare_turn cannot ignore a cancellation; got %+v", f)
	}
	// Waiting on a request the double delayed past the cancel proves it; a hang is always a failure.
	h := fakeHistory([]*simulate.CallRecord{over, cancelled, hung}, simulate.Request{Call: "r1#1", Method: "GET", Path: "/v1/consents/alice", Delayed: true})
	f = decideTurnWithinDeadline(evidenceOf(h))
	if len(f) != 2 || f[0].Warning || f[1].Warning || !strings.Contains(f[0].Message, "ignored the platform's cancellation") || !strings.Contains(f[1].Message, "grace") {
		t.Fatalf("expected an overrun and a hang failure, got %+v", f)
	}
}
