package simulate

import (
	"strings"
	"testing"
)

// Platform clause tests, continued (platform_clauses_test.go has the shared scenarios and the rule: one
// test per `platform` clause of spec/clauses.md, named after the clause).

func TestTURN_WHEN(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python (skipped under -short)")
	}
	t.Parallel()
	h := play(t, "probe", lifecycleYAML)
	dumpOnFailure(t, h)
	for _, step := range []int{5, 6, 10, 11} {
		ev := stepEvents(h, step)
		guard, call, write := -1, -1, -1
		for i, e := range ev {
			switch {
			case strings.Contains(e.Message, "reloaded, slot confirmed, per-Session guard claimed"):
				guard = i
			case e.Call != nil && e.Call.Method == "prepare_turn":
				call = i
			case e.Kind == EventEngine:
				write = i
			}
		}
		if !(guard >= 0 && guard < call && call < write) {
			t.Errorf("step %d: guard %d, prepare_turn %d, write %d", step, guard, call, write)
			continue
		}
		for _, e := range ev[call+1 : write] {
			if e.Delivery == nil {
				t.Errorf("step %d: %q between prepare_turn and the write", step, e.Message)
			}
		}
	}
	// The retry prepares again, with the same attempt, and does not write the input twice.
	r := callsIn(h, 11, "prepare_turn")
	if len(r) != 1 || ctxArg(r[0]).DispatchAttemptID != "t2" || len(writes(h, "t2")) != 1 {
		t.Errorf("retry: %+v, %d writes", r, len(writes(h, "t2")))
	}
	if n := len(h.CallsOf("prepare_turn")); n != 4 {
		t.Errorf("%d prepare_turn calls for 4 engine writes", n)
	}
}

const deadlineYAML = `name: turn-deadline
replicas: 1
deadlines: {turn: 1}
steps:
  - {op: cold_start, session: s1, agent: agent-1, principal: alice}
  - {op: turn, session: s1, attempt: raise1}
  - {op: turn, session: s1, attempt: sleep1}
  - {op: turn, session: s1, attempt: selfcancel1}
  - {op: turn, session: s1, attempt: sleep2, fault: {kind: cancel, after: 0.1}}
  - {op: turn, session: s1, attempt: ok1}
`

func TestTURN_DEADLINE(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python (skipped under -short)")
	}
	t.Parallel()
	h := play(t, "probe", deadlineYAML)
	dumpOnFailure(t, h)
	for step, attempt := range map[int]string{2: "raise1", 3: "sleep1", 4: "selfcancel1", 5: "sleep2"} {
		c := callsIn(h, step, "prepare_turn")
		if len(c) != 1 || c[0].Outcome == OutcomeReturned {
			t.Errorf("step %d: %+v", step, c)
		}
		if !hasCode(h, step, CodeTurnPreparationFailed) {
			t.Errorf("step %d (%s): codes %v", step, attempt, codes(h, step))
		}
		if len(writes(h, attempt)) != 0 {
			t.Errorf("input of %s reached the engine", attempt)
		}
		for _, e := range stepEvents(h, step) {
			if e.Delivery != nil {
				t.Errorf("step %d delivered material of a refused write", step)
			}
		}
	}
	if c := callsIn(h, 3, "prepare_turn"); len(c) == 1 && (c[0].Outcome != OutcomeCancelled || !c[0].CancelSent) {
		t.Errorf("deadline: outcome %s cancel sent %v", c[0].Outcome, c[0].CancelSent)
	}
	if len(writes(h, "ok1")) != 1 {
		t.Errorf("the session does not recover from refused turns")
	}
	noLeak(t, h, "probe-internal-detail")
}

const validityYAML = `name: turn-validity
replicas: 1
steps:
  - {op: cold_start, session: s1, agent: agent-1, principal: alice}
  - {op: turn, session: s1, attempt: valid1, live_for: 1200}
  - {op: turn, session: s1, attempt: refreshfail1, live_for: 600}
  - {op: turn, session: s1, attempt: t3}
  - {op: cold_start, session: s2, agent: agent-1, principal: alice}
  - {op: turn, session: s2, attempt: tiny1, live_for: 200}
`

func TestTURN_VALIDITY(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python (skipped under -short)")
	}
	t.Parallel()
	h := play(t, "probe", validityYAML)
	dumpOnFailure(t, h)
	calls := callsIn(h, 2, "prepare_turn")
	if len(calls) < 2 {
		t.Fatalf("%d prepare_turn calls for a write live for 1200 s with 300 s validity", len(calls))
	}
	start := h.EventOf(calls[0]).At
	var end float64
	for _, e := range stepEvents(h, 2) {
		if strings.Contains(e.Message, "write complete") {
			end = e.At
		}
	}
	if end-start != 1200 {
		t.Fatalf("write live from %g to %g on the host clock, want 1200 s", start, end)
	}
	prev := start
	for i, c := range calls {
		if ctxArg(c).DispatchAttemptID != "valid1" || (i > 0) != c.Ctx.Refresh || ctxArg(c).Refresh != (i > 0) {
			t.Errorf("call %d: attempt %v refresh %v", i, ctxArg(c).DispatchAttemptID, c.Ctx.Refresh)
		}
		at := h.EventOf(c).At
		if i > 0 && at >= prev+300 {
			t.Errorf("refresh %d at %g: validity from %g lapsed first", i, at, prev)
		}
		prev = at
	}
	if prev+300 < end {
		t.Errorf("validity lapsed at %g while the write was live until %g", prev+300, end)
	}
	if len(writes(h, "valid1")) != 1 {
		t.Errorf("refreshes rewrote the input")
	}
	// A failed refresh quarantines the guard; the next turn is refused without calling the provider.
	if !hasCode(h, 3, "TURN_GUARD_QUARANTINED") {
		t.Errorf("failed refresh: %v", codes(h, 3))
	}
	if !hasCode(h, 4, CodeTurnPreparationFailed) || len(callsIn(h, 4, "prepare_turn")) != 0 || len(writes(h, "t3")) != 0 {
		t.Errorf("turn on a quarantined guard: %v", codes(h, 4))
	}
	// A validity of 1 s over a 200 s write needs more refreshes than the platform makes: the write is cut
	// when the last validity lapses, never left live on lapsed material.
	tiny := callsIn(h, 6, "prepare_turn")
	if len(tiny) != MaxRefreshes+1 {
		t.Fatalf("%d prepare_turn calls, want the first and %d refreshes", len(tiny), MaxRefreshes)
	}
	prev = h.EventOf(tiny[0]).At
	for _, c := range tiny[1:] {
		if at := h.EventOf(c).At; at >= prev+1 {
			t.Fatalf("refresh at %g after validity lapsed at %g", at, prev+1)
		} else {
			prev = at
		}
	}
	var cut *Event
	for _, e := range stepEvents(h, 6) {
		if strings.Contains(e.Message, "write complete") {
			t.Errorf("a write whose validity lapsed was reported complete")
		}
		if strings.Contains(e.Message, "cut after") {
			cut = e
		}
	}
	if cut == nil || cut.At != prev+1 {
		t.Errorf("cut %v, want an event when validity lapsed at %g", cut, prev+1)
	}
}

func TestTURN_BACKEND(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python (skipped under -short)")
	}
	t.Parallel()
	for _, backend := range []string{"{profile_exclusive: false, owns_sandbox: true}", "{profile_exclusive: true, owns_sandbox: false}"} {
		h := play(t, "probe", `name: backend
replicas: 1
backend: `+backend+`
steps:
  - {op: cold_start, session: s1, agent: agent-1, principal: alice}
  - {op: turn, session: s1, attempt: t1}
`)
		dumpOnFailure(t, h)
		if !hasCode(h, 2, CodeTurnPreparationFailed) || len(callsIn(h, 2, "prepare_turn")) != 0 || len(writes(h, "t1")) != 0 {
			t.Errorf("backend %s: turn prepared anyway (%v)", backend, codes(h, 2))
		}
	}
	h := play(t, "probe", lifecycleYAML)
	if len(writes(h, "t2")) != 1 {
		t.Errorf("a profile-exclusive backend that owns its sandboxes cannot prepare turns")
	}
}

const uaYAML = `name: user-action
replicas: 1
principals:
  alice: {consent: granted}
  carol: {consent: pending}
steps:
  - {op: cold_start, session: s1, agent: agent-1, principal: alice}
  - {op: cold_start, session: s2, agent: agent-1, principal: carol}
  - {op: turn, session: s2, attempt: ua1, images: 2}
  - {op: turn, session: s2, attempt: badua1}
  - {op: turn, session: s1, attempt: raise1}
  - {op: cold_start, session: s3, agent: agent-1, principal: ua-at-start}
  - {op: advance, seconds: 60}
  - {op: turn, session: s1, attempt: t1}
  - {op: set_consent, principal: carol, consent: granted}
  - {op: retry, session: s2, attempt: ua1}
`

func TestUA_RAISE(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python (skipped under -short)")
	}
	t.Parallel()
	h := play(t, "probe", uaYAML)
	dumpOnFailure(t, h)
	for _, step := range []int{3, 6} {
		var ev *Event
		for _, e := range stepEvents(h, step) {
			if e.Code == CodeTurnUserActionRequired {
				ev = e
			}
		}
		if ev == nil {
			t.Errorf("step %d: no user action: %v", step, codes(h, step))
			continue
		}
		d := ev.Data
		if d["http_status"] != 409 || d["retryable"] != false || d["status"] != "pending" || d["message"] != "Complete consent first." || d["url"] != "https://identity.example/consent" {
			t.Errorf("step %d payload %v", step, d)
		}
	}
	// An invalid user action and any other exception stay generic.
	for _, step := range []int{4, 5} {
		if !hasCode(h, step, CodeTurnPreparationFailed) || hasCode(h, step, CodeTurnUserActionRequired) {
			t.Errorf("step %d: %v", step, codes(h, step))
		}
	}
	noLeak(t, h, "probe-internal-detail")
	noLeak(t, h, "Go elsewhere")
}

func TestUA_NO_RESEND(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python (skipped under -short)")
	}
	t.Parallel()
	h := play(t, "probe", uaYAML)
	dumpOnFailure(t, h)
	kept := false
	for _, e := range stepEvents(h, 3) {
		if e.Data != nil && e.Data["kept"] == "ua1" && e.Data["images"] == 2 {
			kept = true
		}
	}
	if !kept {
		t.Errorf("the refused input and its images were not kept")
	}
	// Nothing is resent: ua1 is prepared again only by the explicit retry, and written once then.
	var steps []int
	for _, c := range h.CallsOf("prepare_turn") {
		if c.Ctx.Attempt == "ua1" {
			steps = append(steps, h.EventOf(c).Step)
		}
	}
	if len(steps) != 2 || steps[0] != 3 || steps[1] != 10 {
		t.Errorf("ua1 prepared in steps %v, want 3 and 10 (the explicit retry)", steps)
	}
	w := writes(h, "ua1")
	if len(w) != 1 || w[0].Step != 10 {
		t.Errorf("ua1 written %d times", len(w))
	}
}

const uaEndpointsYAML = `name: user-action-endpoints
replicas: 2
steps:
  - {op: cold_start, session: s1, agent: agent-1, principal: needs-action, replica: r1}    # 1
  - {op: cold_start, session: s2, agent: agent-1, principal: unknown, replica: r1}         # 2
  - {op: cold_start, session: s3, agent: agent-1, principal: uaraise, replica: r1}         # 3
  - {op: cold_start, session: s4, agent: agent-1, principal: alice, replica: r1}           # 4
  - {op: read_user_actions, session: s1, scope: none}                                      # 5
  - {op: perform_user_action, session: s1, action: check, scope: read}                     # 6
  - {op: read_user_actions, session: s1, replica: r2}                                      # 7
  - {op: turn, session: s1, attempt: c1, via: console}                                     # 8
  - {op: turn, session: s1, attempt: c2}                                                   # 9
  - {op: perform_user_action, session: s1, action: nope}                                   # 10
  - {op: perform_user_action, session: s1, action: check, replica: r1}                     # 11
  - {op: read_user_actions, session: s2}                                                   # 12
  - {op: turn, session: s2, attempt: c3, via: console}                                     # 13
  - {op: read_user_actions, session: s3}                                                   # 14
  - {op: turn, session: s3, attempt: c4, via: console}                                     # 15
  - {op: perform_user_action, session: s3, action: check}                                  # 16
  - {op: read_user_actions, session: s4}                                                   # 17
  - {op: turn, session: s4, attempt: c5, via: console}                                     # 18
`

func TestUA_ENDPOINTS(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python (skipped under -short)")
	}
	t.Parallel()
	h := play(t, "probe", uaEndpointsYAML)
	dumpOnFailure(t, h)
	noCalls := func(step int) {
		t.Helper()
		for _, e := range stepEvents(h, step) {
			if e.Call != nil {
				t.Errorf("step %d called %s", step, e.Call.Method)
			}
		}
	}
	// Scopes: GET needs read, POST needs write.
	for _, step := range []int{5, 6} {
		if !hasCode(h, step, CodeForbidden) {
			t.Errorf("step %d: %v", step, codes(h, step))
		}
		noCalls(step)
	}
	// GET calls read_user_actions with the persisted Session, owner and Agent.
	r := callsIn(h, 7, "read_user_actions")
	if len(r) != 1 || r[0].Replica != "r2" {
		t.Fatalf("GET: %+v", r)
	}
	if c := ctxArg(r[0]); c.SessionID != "s1" || c.OwnerID != "needs-action" || c.AgentID != "agent-1" {
		t.Errorf("GET context %v", c)
	}
	blocked := func(step int) any {
		for _, e := range stepEvents(h, step) {
			if e.Data != nil {
				if b, ok := e.Data["blocked"]; ok {
					return b
				}
			}
		}
		return nil
	}
	if blocked(7) != true || blocked(12) != true || blocked(17) != false {
		t.Errorf("console blocked after pending %v, unknown %v, ready %v", blocked(7), blocked(12), blocked(17))
	}
	// Console sends are blocked while pending or unknown; API sends still go through prepare_turn.
	for _, step := range []int{8, 13, 15} {
		if !hasCode(h, step, "CONSOLE_SEND_BLOCKED") {
			t.Errorf("step %d: console send not blocked: %v", step, codes(h, step))
		}
		noCalls(step)
	}
	if c := callsIn(h, 9, "prepare_turn"); len(c) != 1 || !c[0].Ctx.PriorStateRead || len(writes(h, "c2")) != 1 {
		t.Errorf("API send after a state read: %+v", c)
	}
	if len(writes(h, "c5")) != 1 {
		t.Errorf("console send on a ready Session was not written")
	}
	// POST checks the operation is offered, then calls perform_user_action with it.
	if !hasCode(h, 10, CodeSessionUserActionNotOffered) || len(callsIn(h, 10, "perform_user_action")) != 0 {
		t.Errorf("not offered: %v", codes(h, 10))
	}
	ev := stepEvents(h, 11)
	var methods []string
	for _, e := range ev {
		if e.Call != nil {
			methods = append(methods, string(e.Call.Method))
		}
	}
	if strings.Join(methods, ",") != "read_user_actions,perform_user_action" {
		t.Errorf("POST calls %v", methods)
	}
	if p := callsIn(h, 11, "perform_user_action"); len(p) == 1 && (p[0].Args["action_id"] != "check" || ctxArg(p[0]).OwnerID != "needs-action") {
		t.Errorf("perform args %v", p[0].Args)
	}
	// Provider errors fail the request, never grant readiness.
	for _, step := range []int{14, 16} {
		if !hasCode(h, step, CodeSessionUserActionFailed) {
			t.Errorf("step %d: %v", step, codes(h, step))
		}
		for _, e := range stepEvents(h, step) {
			if e.Data != nil && e.Data["ready"] == true {
				t.Errorf("step %d granted readiness", step)
			}
		}
	}
	if len(callsIn(h, 16, "perform_user_action")) != 0 {
		t.Errorf("perform called although the state could not be read")
	}
	noLeak(t, h, "probe-internal-detail")
}

func TestGEN_DELIVERY_ACK(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python (skipped under -short)")
	}
	t.Parallel()
	h := play(t, "probe", lifecycleYAML)
	dumpOnFailure(t, h)
	// Platform deliveries of a call are complete before the step goes on (engine activation or write).
	for _, e := range h.Events {
		if e.Call == nil || e.Call.Method != "prepare_session" && e.Call.Method != "prepare_turn" {
			continue
		}
		ds := deliveries(h, e.Call.Key)
		next := -1
		for _, x := range h.Events[e.Seq:] {
			if x.Kind == EventEngine || x.Step != e.Step {
				next = x.Seq
				break
			}
		}
		for _, x := range h.Events {
			if x.Delivery != nil && x.Delivery.From == e.Call.Key && (x.Seq < e.Seq || next >= 0 && x.Seq > next) {
				t.Errorf("delivery %s of %s at event %d, outside [%d, %d]", x.Delivery.Name, e.Call.Key, x.Seq, e.Seq, next)
			}
		}
		if e.Call.Result != nil && len(ds) != len(e.Call.Result.Files) {
			t.Errorf("%s returned %d files, %d delivered", e.Call.Key, len(e.Call.Result.Files), len(ds))
		}
	}
	// A provider's acknowledged sandbox write is complete when write_file returns: recorded before the
	// callback returned, and readable on another replica in the next turn.
	in, re := callsIn(h, 5, "prepare_turn")[0], callsIn(h, 6, "prepare_turn")[0]
	var wrote, read *Event
	for _, e := range h.Events {
		if e.Sandbox != nil && e.Sandbox.Op == "write_file" && e.Sandbox.Call == in.Key {
			wrote = e
		}
		if e.Sandbox != nil && e.Sandbox.Op == "read_file" && e.Sandbox.Call == re.Key {
			read = e
		}
	}
	if wrote == nil || read == nil {
		t.Fatalf("write %v read %v", wrote, read)
	}
	if wrote.Seq > seqOf(h, in) || wrote.Sandbox.Error != "" || read.Sandbox.Error != "" || read.Sandbox.Size != wrote.Sandbox.Size || re.Replica == in.Replica {
		t.Errorf("write %+v (call at %d), read %+v", wrote.Sandbox, seqOf(h, in), read.Sandbox)
	}
}
