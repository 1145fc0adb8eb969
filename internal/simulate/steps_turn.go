package simulate

import (
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/astrabox-dev/astrabox/internal/harness"
	"github.com/astrabox-dev/astrabox/internal/seconds"
)

// MaxRefreshes bounds the validity refreshes the platform makes for one live write. A write that would need
// more is cut when its validity runs out rather than left live on lapsed material.
const MaxRefreshes = 100

func (p *platform) turnArgs(s *session, attempt string, refresh bool) map[string]any {
	return map[string]any{"context": map[string]any{
		"session_id":          s.id,
		"agent_id":            s.agent,
		"principal_id":        s.owner,
		"dispatch_attempt_id": attempt,
		"runtime_generation":  s.generation,
		"sandbox_handle":      sandboxJSON(s.sandbox),
		"deadline":            0.0,
		"refresh":             refresh,
		"file_paths_dir":      RuntimeFileDir(s.id),
	}}
}

// turn prepares and makes one engine write, or a reconnect retry of one (TURN-WHEN, TURN-DEADLINE,
// TURN-VALIDITY, TURN-BACKEND, UA-RAISE, UA-NO-RESEND).
func (p *platform) turn(st *Step) {
	s, r := p.sessionFor(st)
	if s == nil {
		return
	}
	attempt := st.Attempt
	if st.Op == OpRetry {
		p.event(&Event{Kind: EventPlatform, Replica: r.name, Message: "reconnect retry of attempt " + attempt + " (same dispatch_attempt_id)"})
	}
	if p.turnRefused(st, s, r) {
		return
	}
	p.event(&Event{Kind: EventPlatform, Replica: r.name, Message: fmt.Sprintf("session %s reloaded, slot confirmed, per-Session guard claimed for attempt %s", s.id, attempt)})
	rec := p.call(r, callSpec{method: "prepare_turn", args: p.turnArgs(s, attempt, false), deadline: p.sc.Deadlines.Turn, fault: st.Fault, holds: hasHold(st),
		ctx: CallContext{Agent: s.agent, Session: s.id, Principal: s.owner, Attempt: attempt, SandboxID: s.sandbox.ID, PriorStateRead: s.stateRead}})
	validity, ok := p.turnOutcome(r, rec, s, st)
	if !ok {
		return
	}
	if !p.attempts[s.id+"/"+attempt] {
		p.attempts[s.id+"/"+attempt] = true
		p.event(&Event{Kind: EventEngine, Replica: r.name, Message: fmt.Sprintf("input of attempt %s written to the engine of session %s", attempt, s.id), Data: map[string]any{"attempt": attempt, "images": st.Images}})
	} else {
		p.event(&Event{Kind: EventEngine, Replica: r.name, Message: fmt.Sprintf("attempt %s resumed after reconnect; the engine already has its input", attempt)})
	}
	// Keep the write live for live_for host seconds, refreshing validity before it lapses.
	p.fillLiveFor(st)
	live := seconds.Duration(st.LiveFor.Seconds)
	if validity <= 0 || live <= 0 {
		p.clock.Advance(live)
		p.event(&Event{Kind: EventPlatform, Replica: r.name, Message: "write complete; guard released"})
		return
	}
	elapsed := time.Duration(0)
	covered := false // the current validity lasts until the write ends
	for n := 0; n < MaxRefreshes; n++ {
		lead := time.Duration(math.Min(validity*0.2, 30) * float64(time.Second))
		next := time.Duration(validity*float64(time.Second)) - lead
		if next <= 0 {
			next = time.Duration(validity * float64(time.Second) / 2)
		}
		if elapsed+next >= live {
			covered = true
			break
		}
		p.clock.Advance(next)
		elapsed += next
		p.event(&Event{Kind: EventPlatform, Replica: r.name, Message: fmt.Sprintf("validity of attempt %s lapses in %s; refreshing", attempt, lead)})
		rrec := p.call(r, callSpec{method: "prepare_turn", args: p.turnArgs(s, attempt, true), deadline: p.sc.Deadlines.Turn,
			ctx: CallContext{Agent: s.agent, Session: s.id, Principal: s.owner, Attempt: attempt, Refresh: true, SandboxID: s.sandbox.ID, PriorStateRead: s.stateRead}})
		v, ok := p.turnOutcome(r, rrec, s, st)
		if !ok {
			s.quarantine = true
			p.refuse(r.name, "TURN_GUARD_QUARANTINED", "refresh of attempt %s failed; the guard of session %s is quarantined", attempt, s.id)
			return
		}
		if v <= 0 {
			covered = true
			break
		}
		validity = v
	}
	if !covered && elapsed+time.Duration(validity*float64(time.Second)) < live {
		p.clock.Advance(time.Duration(validity * float64(time.Second)))
		p.event(&Event{Kind: EventPlatform, Replica: r.name, Message: fmt.Sprintf("write of attempt %s cut after %d refreshes: its validity lapsed while it was still live", attempt, MaxRefreshes)})
		return
	}
	p.clock.Advance(live - elapsed)
	p.event(&Event{Kind: EventPlatform, Replica: r.name, Message: "write complete; guard released"})
}

// turnRefused refuses a turn the platform does not prepare (TURN-BACKEND, the console's block, a Session
// without its slot or with a quarantined guard), telling whether it did.
func (p *platform) turnRefused(st *Step, s *session, r *replica) bool {
	if !p.sc.Backend.ProfileExclusive || !p.sc.Backend.OwnsSandbox {
		p.refuse(r.name, CodeTurnPreparationFailed, "the sandbox backend does not declare sandbox_is_profile_exclusive and implement owns_sandbox; turn preparation refused")
		return true
	}
	if st.Via == "console" && s.blocked {
		s.keptInputs = append(s.keptInputs, st.Attempt)
		p.refuse(r.name, "CONSOLE_SEND_BLOCKED", "the console blocks sending: a prerequisite of session %s is unknown or pending", s.id)
		return true
	}
	// Reload the Session, confirm the slot, claim the guard.
	if s.state != "active" {
		p.refuse(r.name, CodeTurnPreparationFailed, "session %s is %s; the turn does not hold a slot", s.id, s.state)
		return true
	}
	if s.quarantine {
		p.refuse(r.name, CodeTurnPreparationFailed, "the turn guard of session %s is quarantined after a failed refresh", s.id)
		return true
	}
	return false
}

// turnOutcome applies the platform's rules to a prepare_turn result. It returns the validity period (0 when
// none) and whether the write may proceed.
func (p *platform) turnOutcome(r *replica, rec *CallRecord, s *session, st *Step) (float64, bool) {
	switch rec.Outcome {
	case OutcomeReturned:
	case OutcomeRaised:
		if rec.Error != nil && rec.Error.UserAction != nil {
			p.userActionRefusal(r, rec, s)
			s.keptInputs = append(s.keptInputs, st.Attempt)
			p.event(&Event{Kind: EventPlatform, Replica: r.name, Message: fmt.Sprintf("console keeps the refused input of attempt %s and its %d image(s) for an explicit retry; nothing is resent", st.Attempt, st.Images),
				Data: map[string]any{"kept": st.Attempt, "images": st.Images}})
			return 0, false
		}
		p.refuse(r.name, CodeTurnPreparationFailed, "prepare_turn raised; the write is refused and the input never reaches the engine")
		return 0, false
	default:
		p.refuse(r.name, CodeTurnPreparationFailed, "prepare_turn %s; the write is refused and the input never reaches the engine", rec.Outcome)
		return 0, false
	}
	res := rec.Result
	if !KindMaterials.Of(res) {
		p.refuse(r.name, CodeTurnPreparationFailed, "prepare_turn returned %s, not RuntimeMaterials", res.Name())
		return 0, false
	}
	if len(res.Environment) > 0 {
		p.refuse(r.name, CodeTurnPreparationFailed, "prepare_turn returned environment (%d name(s)); a non-empty environment fails the write", len(res.Environment))
		return 0, false
	}
	tv := res.Validity()
	if tv.Problem != "" {
		p.refuse(r.name, CodeTurnPreparationFailed, "turn_validity_seconds %s; it must be a positive finite number", tv.Problem)
		return 0, false
	}
	v := tv.Seconds
	p.sawValidity(v)
	if !p.deliver(r, rec, s, res.Files) {
		return 0, false
	}
	return v, true
}

func (p *platform) uaArgs(s *session) map[string]any {
	return map[string]any{"context": map[string]any{"session_id": s.id, "owner_id": s.owner, "agent_id": s.agent}}
}

// readUserActions serves GET /api/v1/sessions/{id}/user-action (UA-ENDPOINTS).
func (p *platform) readUserActions(st *Step) {
	s, r := p.sessionFor(st)
	if s == nil {
		return
	}
	scope := st.Scope
	if scope == "" {
		scope = "read"
	}
	if scope != "read" && scope != "write" {
		p.refuse(r.name, CodeForbidden, "GET /api/v1/sessions/%s/user-action needs read scope", s.id)
		return
	}
	state, ok := p.readState(r, st, s)
	if !ok {
		s.blocked = true
		return
	}
	s.stateRead = true
	p.applyState(r, s, state, "GET")
}

type uaState struct {
	Ready      bool
	UserAction *harness.UserAction
	Actions    []string
}

func (p *platform) readState(r *replica, st *Step, s *session) (*uaState, bool) {
	rec := p.call(r, callSpec{method: "read_user_actions", args: p.uaArgs(s), deadline: p.sc.Deadlines.UserAction, fault: st.Fault, holds: hasHold(st),
		ctx: CallContext{Agent: s.agent, Session: s.id, Principal: s.owner}})
	return p.stateOutcome(r, rec)
}

func (p *platform) stateOutcome(r *replica, rec *CallRecord) (*uaState, bool) {
	if !rec.Returned(KindUserActionState) {
		p.refuse(r.name, CodeSessionUserActionFailed, "%s failed (%s); readiness is not granted", rec.Method, rec.Outcome)
		return nil, false
	}
	if problems := ValidateState(rec.Result.Ready, rec.Result.UserAction, rec.Result.Actions); len(problems) > 0 {
		p.refuse(r.name, CodeSessionUserActionFailed, "%s returned a malformed state: %v", rec.Method, problems)
		return nil, false
	}
	st := &uaState{Ready: rec.Result.Ready}
	if len(rec.Result.UserAction) > 0 && string(rec.Result.UserAction) != "null" {
		var ua harness.UserAction
		if err := json.Unmarshal(rec.Result.UserAction, &ua); err != nil {
			p.refuse(r.name, CodeSessionUserActionFailed, "%s (call %s) returned a user_action that does not decode: %v", rec.Method, rec.Key, err)
			return nil, false
		}
		st.UserAction = &ua
	}
	for _, a := range rec.Result.Actions {
		st.Actions = append(st.Actions, a.ID)
	}
	return st, true
}

func (p *platform) applyState(r *replica, s *session, st *uaState, verb string) {
	p.sawState(s.id, st.Actions)
	status := ""
	if st.UserAction != nil {
		status = st.UserAction.Status
	}
	s.blocked = !st.Ready && (status == "pending" || status == "unknown" || status == "")
	p.event(&Event{Kind: EventOutcome, Replica: r.name, Message: fmt.Sprintf("%s user-action: ready=%v status=%s actions=%v; console sending blocked=%v", verb, st.Ready, status, st.Actions, s.blocked),
		Data: map[string]any{"ready": st.Ready, "status": status, "blocked": s.blocked}})
}

// performUserAction serves POST /api/v1/sessions/{id}/user-action (UA-ENDPOINTS).
func (p *platform) performUserAction(st *Step) {
	s, r := p.sessionFor(st)
	if s == nil {
		return
	}
	scope := st.Scope
	if scope == "" {
		scope = "write"
	}
	if scope != "write" {
		p.refuse(r.name, CodeForbidden, "POST /api/v1/sessions/%s/user-action needs write scope", s.id)
		return
	}
	state, ok := p.readState(r, st, s)
	if !ok {
		s.blocked = true
		return
	}
	offered := false
	for _, a := range state.Actions {
		if a == st.Action {
			offered = true
		}
	}
	if !offered {
		p.refuse(r.name, CodeSessionUserActionNotOffered, "operation %q is not currently offered (offered: %v); perform_user_action not called", st.Action, state.Actions)
		return
	}
	args := p.uaArgs(s)
	args["action_id"] = st.Action
	rec := p.call(r, callSpec{method: "perform_user_action", args: args, deadline: p.sc.Deadlines.UserAction, fault: st.Fault, holds: hasHold(st),
		ctx: CallContext{Agent: s.agent, Session: s.id, Principal: s.owner}})
	after, ok := p.stateOutcome(r, rec)
	if !ok {
		s.blocked = true
		return
	}
	p.applyState(r, s, after, "POST")
}
