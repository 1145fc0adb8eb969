package simulate

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/astrabox-dev/astrabox/internal/harness"
	"github.com/astrabox-dev/astrabox/internal/secrets"
)

// Platform error codes.
const (
	CodeRuntimePreparationFailed    = "RUNTIME_PREPARATION_FAILED"
	CodeTurnPreparationFailed       = "TURN_PREPARATION_FAILED"
	CodeTurnUserActionRequired      = "TURN_PREPARATION_USER_ACTION_REQUIRED"
	CodeSessionUserActionFailed     = "SESSION_USER_ACTION_FAILED"
	CodeSessionUserActionNotOffered = "SESSION_USER_ACTION_NOT_OFFERED"
	CodeForbidden                   = "FORBIDDEN"
	CodeNoSession                   = "SESSION_NOT_FOUND"
)

var safeName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// IsSafeFileName tells whether a RuntimeFile name is a safe basename (SESSION-NAMES).
func IsSafeFileName(name string) bool {
	return safeName.MatchString(name) && !strings.Contains(name, "..")
}

func (p *platform) claim(st *Step) {
	a := p.agents[st.Agent]
	r := p.replicaFor(st)
	if !p.planAgent(r, a) {
		return
	}
	var b *box
	for _, x := range p.boxes {
		if x.agent == a.spec.ID && x.state == "waiting" && x.generation == a.generation {
			b = x
			break
		}
	}
	if b == nil {
		p.event(&Event{Kind: EventPlatform, Replica: r.name, Message: "no waiting inventory for agent " + a.spec.ID + "; the platform cold-starts session " + st.Session + " instead of claiming"})
		p.coldStart(st)
		return
	}
	b.state = "claimed"
	s := &session{id: st.Session, agent: a.spec.ID, owner: st.Principal, sandbox: b.sandbox, state: "starting", delivered: map[string]bool{}, generation: b.generation}
	p.sessions[s.id] = s
	p.event(&Event{Kind: EventPlatform, Replica: r.name, Message: fmt.Sprintf("session %s claims box %s (placement kept, sandbox %s, engine_initialized=%v)", s.id, b.id, b.sandbox.ID, b.engineInit),
		Data: map[string]any{"box": b.id, "session": s.id}})
	if !p.prepareSession(r, st, s, a, "claim", !b.engineInit) {
		b.state = "discarded"
		s.state = "failed"
		p.event(&Event{Kind: EventPlatform, Replica: r.name, Message: fmt.Sprintf("claim failed: box %s discarded; no cold start", b.id), Data: map[string]any{"box": b.id, "discarded": true}})
	}
}

func (p *platform) coldStart(st *Step) {
	a := p.agents[st.Agent]
	r := p.replicaFor(st)
	if st.Op == OpColdStart && !p.planAgent(r, a) {
		return
	}
	s := &session{id: st.Session, agent: a.spec.ID, owner: st.Principal, state: "starting", delivered: map[string]bool{}, generation: a.generation}
	s.sandbox = p.newSandbox(a)
	p.sessions[s.id] = s
	p.event(&Event{Kind: EventPlatform, Replica: r.name, Message: fmt.Sprintf("cold start of session %s in new sandbox %s", s.id, s.sandbox.ID)})
	if !p.prepareSession(r, st, s, a, "cold_start", true) {
		s.state = "failed"
	}
}

func (p *platform) reattach(st *Step) {
	s, r := p.sessionFor(st)
	if s == nil {
		return
	}
	a := p.agents[s.agent]
	p.event(&Event{Kind: EventPlatform, Replica: r.name, Message: fmt.Sprintf("session %s reattaches to sandbox %s with a new runtime", s.id, s.sandbox.ID)})
	if !p.prepareSession(r, st, s, a, "reattachment", true) {
		s.state = "failed"
	}
}

func (p *platform) replaceSandbox(st *Step) {
	s, r := p.sessionFor(st)
	if s == nil {
		return
	}
	a := p.agents[s.agent]
	old := s.sandbox.ID
	s.sandbox = p.newSandbox(a)
	s.delivered = map[string]bool{}
	p.event(&Event{Kind: EventPlatform, Replica: r.name, Message: fmt.Sprintf("session %s: sandbox %s replaced by %s", s.id, old, s.sandbox.ID)})
	if !p.prepareSession(r, st, s, a, "sandbox_replacement", true) {
		s.state = "failed"
	}
}

func (p *platform) sessionArgs(s *session, a *agentState, trigger string) map[string]any {
	tok := p.token("astx_wid_")
	p.hist.Secrets = append(p.hist.Secrets, secrets.Secret{Value: tok, Origin: "workload identity token of session " + s.id, Kind: secrets.KindWorkloadToken})
	return map[string]any{"context": map[string]any{
		"session_id":         s.id,
		"agent_id":           a.spec.ID,
		"principal_id":       s.owner,
		"config":             a.config,
		"runtime_generation": s.generation,
		"sandbox_id":         s.sandbox.ID,
		"workload_identity":  map[string]any{"subject": "workload:" + s.id, "token": tok},
		"trigger":            trigger,
		"file_paths_dir":     RuntimeFileDir(s.id),
	}}
}

// prepareSession runs prepare_session before engine activation, delivers its files and activates the engine
// (SESSION-WHEN, SESSION-DELIVERY, SESSION-ENV-ADAPTER). It reports whether the Session became active.
func (p *platform) prepareSession(r *replica, st *Step, s *session, a *agentState, trigger string, fresh bool) bool {
	rec := p.call(r, callSpec{method: "prepare_session", args: p.sessionArgs(s, a, trigger), deadline: p.sc.Deadlines.Session, fault: st.Fault, holds: hasHold(st),
		ctx: CallContext{Agent: a.spec.ID, Session: s.id, Principal: s.owner, Trigger: trigger, SandboxID: s.sandbox.ID}})
	if rec.Outcome != OutcomeReturned {
		if rec.Outcome == OutcomeRaised && rec.Error != nil && rec.Error.UserAction != nil {
			p.userActionRefusal(r, rec, s)
			return false
		}
		p.refuse(r.name, CodeRuntimePreparationFailed, "prepare_session failed (%s); activation blocked; the provider's text is not exposed", rec.Outcome)
		return false
	}
	res := rec.Result
	if !KindMaterials.Of(res) {
		p.refuse(r.name, CodeRuntimePreparationFailed, "prepare_session returned %s, not RuntimeMaterials", res.Name())
		return false
	}
	if !p.deliver(r, rec, s, res.Files) {
		return false
	}
	names := slices.Sorted(maps.Keys(res.Environment))
	for _, n := range names {
		if IsPlatformOwnedEnv(n) {
			p.refuse(r.name, CodeRuntimePreparationFailed, "environment name %s is platform-owned and cannot be overwritten; activation blocked", n)
			return false
		}
	}
	ad := adapters[p.sc.Engine]
	if len(names) > 0 && !ad.StartupEnvironment {
		p.refuse(r.name, CodeRuntimePreparationFailed, "engine adapter %s does not support startup environment and refuses the Session environment; activation blocked", ad.Name)
		return false
	}
	es := &EngineStart{Adapter: ad.Name, Session: s.id, SandboxID: s.sandbox.ID, Fresh: fresh, EnvNames: names, Initialized: true}
	if len(ad.Probe) > 0 {
		es.Probe = ad.Probe
		es.ProbeEnv = []string{}
	}
	s.state = "active"
	msg := fmt.Sprintf("engine %s activated for session %s (runtime_env: %s)", ad.Name, s.id, strings.Join(names, ", "))
	if len(names) == 0 {
		msg = fmt.Sprintf("engine %s activated for session %s (no Session environment)", ad.Name, s.id)
	}
	if !fresh {
		msg += "; already-initialized runtime reused with Vault substitution"
	}
	p.event(&Event{Kind: EventEngine, Replica: r.name, Engine: es, Message: msg})
	return true
}

// deliver writes RuntimeFile entries into the private home, mode 0600, owned by the workload, outside the
// task workspace, at the Session's stable path; delivery completes before the invocation unwinds
// (GEN-DELIVERY-ACK).
func (p *platform) deliver(r *replica, rec *CallRecord, s *session, files []harness.MaterialFile) bool {
	seen := map[string]bool{}
	for _, f := range files {
		if !IsSafeFileName(f.Name) || seen[f.Name] {
			code := CodeRuntimePreparationFailed
			if rec.Method == "prepare_turn" {
				code = CodeTurnPreparationFailed
			}
			p.refuse(r.name, code, "file name %q is not a safe, unique basename; nothing delivered", f.Name)
			return false
		}
		seen[f.Name] = true
	}
	for _, f := range files {
		dest := RuntimeFileDir(s.id) + "/" + f.Name
		s.sandbox.PlatformWrite(dest, f.Content, 0o600, OwnerWorkload)
		s.delivered[f.Name] = true
		// The record says what the sandbox now holds, not what was meant.
		gotMode, owner, size, _ := s.sandbox.meta(dest)
		mode := fmt.Sprintf("%04o", gotMode)
		p.event(&Event{Kind: EventDelivery, Replica: r.name, Message: fmt.Sprintf("delivered %s to %s (%s, %s)", f.Name, dest, mode, owner),
			Delivery: &Delivery{SandboxID: s.sandbox.ID, Session: s.id, Name: f.Name, Path: dest, Mode: mode, Owner: owner, Size: size, From: rec.Key}})
	}
	return true
}

// userActionRefusal validates the provider's PreparationUserActionRequired and answers 409 (UA-RAISE).
func (p *platform) userActionRefusal(r *replica, rec *CallRecord, s *session) {
	ua := rec.Error.UserAction
	if problems := ValidateUserAction(ua.Message, ua.URL, ua.Status); len(problems) > 0 {
		code := CodeRuntimePreparationFailed
		if rec.Method == "prepare_turn" {
			code = CodeTurnPreparationFailed
		}
		p.refuse(r.name, code, "user action refused by host validation (%s); answered as a generic failure", strings.Join(problems, "; "))
		return
	}
	payload := map[string]any{"status": ua.Status, "message": ua.Message, "retryable": false, "http_status": 409}
	if ua.URL != nil {
		payload["url"] = *ua.URL
	}
	b, _ := json.Marshal(payload)
	p.event(&Event{Kind: EventOutcome, Replica: r.name, Code: CodeTurnUserActionRequired, Message: "409 non-retryable user action required: " + string(b), Data: payload})
}

// ValidateState checks a SessionUserActionState the way the host does (UA-STATE): a state that is not ready
// carries a valid user action, and action ids are non-empty and unique.
func ValidateState(ready bool, userAction json.RawMessage, actions []harness.ActionCommand) []string {
	var out []string
	hasUA := len(userAction) > 0 && string(userAction) != "null"
	if !ready && !hasUA {
		out = append(out, "ready=False without a user_action")
	}
	if hasUA {
		var ua struct {
			Message *string `json:"message"`
			URL     *string `json:"url"`
			Status  *string `json:"status"`
		}
		if err := json.Unmarshal(userAction, &ua); err != nil {
			out = append(out, "user_action is not a mapping of message, status and url")
		} else {
			msg, status := "", ""
			if ua.Message != nil {
				msg = *ua.Message
			}
			if ua.Status != nil {
				status = *ua.Status
			}
			for _, p := range ValidateUserAction(msg, ua.URL, status) {
				out = append(out, "user_action "+p)
			}
		}
	}
	seen := map[string]bool{}
	for _, a := range actions {
		if a.ID == "" {
			out = append(out, "an action has an empty id")
		}
		if seen[a.ID] {
			out = append(out, fmt.Sprintf("action id %q repeats", a.ID))
		}
		seen[a.ID] = true
		if a.Label == "" {
			out = append(out, fmt.Sprintf("action %q has no label", a.ID))
		}
	}
	return out
}

// sessionFor returns the Session a step names and the replica it runs on; when the Session was never started
// (its cold start or claim failed first) the step is refused and the Session is nil.
func (p *platform) sessionFor(st *Step) (*session, *replica) {
	s, r := p.sessions[st.Session], p.replicaFor(st)
	if s == nil {
		p.refuse(r.name, CodeNoSession, "session %s was never started (its cold start or claim failed before the platform created it)", st.Session)
	}
	return s, r
}
