package conformance

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/astrabox-dev/astrabox/internal/harness"
	"github.com/astrabox-dev/astrabox/internal/report"
	"github.com/astrabox-dev/astrabox/internal/simulate"
)

func init() {
	register(
		&Check{
			ID: "UA-VALID", Title: "User actions pass the host's validation", Area: AreaUser, Severity: report.SeverityError,
			Clauses: []string{"UA-VALID"},
			Needs:   "a user action raised or returned by the provider", Exercise: exUserActions(false), Judges: judgesUA,
			Rationale: "The host shows a user action to the person who must act: a message of 1 to 1000 printable characters, a status among pending, unknown, failed and expired, and at most an absolute http(s) URL without user information. A user action the host cannot validate is answered as a generic failure, so the user never learns what to do, and a state carrying one is refused.",
			Hint:      "Use a short fixed message, a valid status, and an https URL from your identity service (or none).",
			Wrong:     "raise PreparationUserActionRequired(message=\"\", status=\"waiting\", url=\"javascript:alert(1)\")",
			Right:     "raise PreparationUserActionRequired(message=\"Grant the tools consent, then send again.\", status=\"pending\", url=\"https://identity.example/consent\")",
			Decide:    decideUAValid,
		},
		&Check{
			ID: "UA-STATE", Title: "User-action states are well formed", Area: AreaUser, Severity: report.SeverityError,
			Clauses: []string{"UA-STATE"},
			Needs:   "a user-action state returned by read_user_actions or perform_user_action", Exercise: exUAState, Judges: judgesUAState,
			Rationale: "read_user_actions and perform_user_action answer the Session's user-action endpoints. A state that is not ready must say what the user has to do, and the offered operations need unique, non-empty ids and labels; otherwise the host refuses the state with SESSION_USER_ACTION_FAILED and the console can neither explain nor unblock the Session.",
			Hint:      "Return SessionUserActionState(ready=False, user_action=SessionUserAction(...), actions=(...)) with unique action ids, or ready=True.",
			Wrong:     "return SessionUserActionState(ready=False, user_action=None, actions=(CHECK, CHECK))",
			Right:     "return SessionUserActionState(ready=False, user_action=SessionUserAction(message=MSG, status=\"pending\", url=url), actions=(CHECK,))",
			Decide:    decideUAState,
		},
		&Check{
			ID: "UA-IDEMPOTENT", Title: "perform_user_action is idempotent for the pending requirement", Area: AreaUser, Severity: report.SeverityError,
			Clauses: []string{"UA-IDEMPOTENT"},
			Needs:   "a perform_user_action that reached the provider for one pending requirement on two replicas", Exercise: exUAIdempotent, Judges: []simulate.Callback{simulate.CallPerformUserAction},
			Rationale: "Users click twice, browsers retry, and the platform's replicas may each serve one of the requests. While the requirement is the same, performing the same operation again must give the same state and must not create new external effects (a new record, a new flow) on every call.",
			Hint:      "Make the operation a check of the external state keyed by the principal (or by session and action), never a new record per call.",
			Wrong:     "async def perform_user_action(self, *, context, action_id):\n    await put(f\"/v1/records/checks/{context.owner_id}/{uuid.uuid4()}\", {...})\n    return await self._state(context)",
			Right:     "async def perform_user_action(self, *, context, action_id):\n    await post(f\"/v1/consents/{context.owner_id}/check\")  # idempotent re-check\n    return await self._state(context)",
			Decide:    decideUAIdempotent,
		},
		&Check{
			ID: "UA-AUTHORITY", Title: "prepare_turn enforces pending prerequisites itself", Area: AreaUser, Severity: report.SeverityError,
			Clauses: []string{"UA-AUTHORITY"},
			Needs:   "a prepare_turn for a principal whose consent was pending (at the identity service, or at a declared service that holds it)", Exercise: exUAAuthority, Judges: judgesTurn,
			Rationale: "Turns arrive through the API and from other replicas without anybody having read the Session's user-action state. prepare_turn stays the authority: while a prerequisite such as consent is pending it must refuse, whether or not read_user_actions ran before, and never cache a read state as permission. When consent lives in a service of your own, declare it (consent in [tool.astrabox.services.NAME], docs/services.md): the suite then moves it there as at the identity service and judges each turn by what your service said.",
			Hint:      "Check the prerequisite in prepare_turn on every call and raise PreparationUserActionRequired while it is pending.",
			Wrong:     "async def prepare_turn(self, *, context):\n    if context.session_id in self._read_sessions:  # only checked after a state read\n        await self._require_consent(context.principal_id)\n    return await self._materials(context)",
			Right:     "async def prepare_turn(self, *, context):\n    await self._require_consent(context.principal_id)  # every call\n    return await self._materials(context)",
			Decide:    decideUAAuthority,
		},
	)
}

// raisedUserAction returns the user action a call raised, or nil.
func raisedUserAction(cs callSite) *harness.UserAction {
	if cs.c.Outcome == simulate.OutcomeRaised && cs.c.Error != nil {
		return cs.c.Error.UserAction
	}
	return nil
}

// stateOf returns the SessionUserActionState a call returned, or nil.
func stateOf(cs callSite) *harness.Result {
	if cs.returned() && simulate.KindUserActionState.Of(cs.c.Result) {
		return cs.c.Result
	}
	return nil
}

// stateUserAction decodes the user_action of a state; ok is false when it is absent or not a mapping.
func stateUserAction(r *harness.Result) (harness.UserAction, bool) {
	var ua harness.UserAction
	if len(r.UserAction) == 0 || string(r.UserAction) == "null" {
		return ua, false
	}
	var raw struct {
		Message *string `json:"message"`
		URL     *string `json:"url"`
		Status  *string `json:"status"`
	}
	if err := json.Unmarshal(r.UserAction, &raw); err != nil {
		return ua, false
	}
	if raw.Message != nil {
		ua.Message = *raw.Message
	}
	if raw.Status != nil {
		ua.Status = *raw.Status
	}
	ua.URL = raw.URL
	return ua, true
}

func decideUAValid(ev *Evidence) []Finding {
	var out []Finding
	seen := map[string]bool{}
	add := func(cs callSite, what string, problems []string, loc *report.Location) {
		key := string(cs.c.Method) + "|" + what + "|" + strings.Join(problems, ";")
		if seen[key] {
			return
		}
		seen[key] = true
		msg := fmt.Sprintf("%s %s that the host refuses: %s", cs.c.Method, what, strings.Join(problems, "; "))
		out = append(out, Finding{Message: msg, Location: loc, Evidence: []report.Evidence{ev.evidence(cs, msg, loc)}})
	}
	for _, cs := range ev.calls() {
		if ua := raisedUserAction(cs); ua != nil {
			if p := simulate.ValidateUserAction(ua.Message, ua.URL, ua.Status); len(p) > 0 {
				add(cs, "raised a user action", p, ev.errorLocation(cs))
			}
		}
		if st := stateOf(cs); st != nil {
			if ua, ok := stateUserAction(st); ok {
				if p := simulate.ValidateUserAction(ua.Message, ua.URL, ua.Status); len(p) > 0 {
					add(cs, "returned a state whose user action", p, ev.methodLocation(cs.c.Method))
				}
			}
		}
	}
	return out
}

// stateProblems are the ValidateState problems of a state that are not user-action validation problems
// (those belong to UA-VALID).
func stateProblems(st *harness.Result) []string {
	all := simulate.ValidateState(st.Ready, st.UserAction, st.Actions)
	skip := map[string]bool{}
	if ua, ok := stateUserAction(st); ok {
		for _, p := range simulate.ValidateUserAction(ua.Message, ua.URL, ua.Status) {
			skip["user_action "+p] = true
		}
	}
	var out []string
	for _, p := range all {
		if !skip[p] {
			out = append(out, p)
		}
	}
	return out
}

var exUAState = needCalls(need{calls: judgesUAState, label: "returned a state",
	met:   func(_ *Evidence, cs callSite) bool { return stateOf(cs) != nil },
	reach: "read_user_actions steps (GET user-action) reach it"})

func decideUAState(ev *Evidence) []Finding {
	var out []Finding
	seen := map[string]bool{}
	for _, cs := range ev.calls(simulate.CallReadUserActions, simulate.CallPerformUserAction) {
		if !cs.returned() {
			continue
		}
		var problems []string
		if !simulate.KindUserActionState.Of(cs.c.Result) {
			problems = []string{fmt.Sprintf("returned %s, not a SessionUserActionState", cs.c.Result.Name())}
		} else {
			problems = stateProblems(cs.c.Result)
		}
		if len(problems) == 0 {
			continue
		}
		key := string(cs.c.Method) + "|" + strings.Join(problems, ";")
		if seen[key] {
			continue
		}
		seen[key] = true
		loc := ev.methodLocation(cs.c.Method)
		msg := fmt.Sprintf("%s returned a malformed user-action state: %s", cs.c.Method, strings.Join(problems, "; "))
		out = append(out, Finding{Message: msg, Location: loc, Evidence: []report.Evidence{ev.evidence(cs, msg, loc)}})
	}
	return out
}

// stateKey is a canonical rendering of a state (readiness, user action and offered operations).
func stateKey(st *harness.Result) string {
	ids := make([]string, 0, len(st.Actions))
	for _, a := range st.Actions {
		ids = append(ids, a.ID+"="+a.Label)
	}
	return fmt.Sprintf("ready=%v user_action=%s actions=%v", st.Ready, canonical(st.UserAction), ids)
}

// exUAIdempotent needs one pending requirement performed on two replicas.
func exUAIdempotent(ev *Evidence) Exercise {
	t := newTally(callNoun(simulate.CallPerformUserAction))
	for _, cs := range ev.calls(simulate.CallPerformUserAction) {
		t.add(cs)
	}
	met := 0
	for _, h := range ev.Histories {
		for _, g := range performGroups(h) {
			if len(replicasOf(g)) >= 2 {
				met++
				t.mark("pending requirements performed on two or more replicas")
			}
		}
	}
	reach := "a scenario that performs an operation the provider offers, for one pending requirement, on two replicas reaches it"
	offered := offeredActions(ev)
	if len(offered) > 0 {
		reach += " (the provider offered " + offeredText(offered) + ")"
	} else if met == 0 && t.calls == 0 && len(ev.calls(simulate.CallReadUserActions)) > 0 {
		return Exercise{Tally: t.report(), NotApplicable: "no user-action state the provider returned offered an operation, so the host never calls perform_user_action"}
	}
	return need{reach: reach}.result(t, met)
}

// offeredActions counts the operation ids the provider offered in user-action states.
func offeredActions(ev *Evidence) map[string]int {
	out := map[string]int{}
	for _, cs := range ev.calls(judgesUAState...) {
		if st := stateOf(cs); st != nil {
			for _, a := range st.Actions {
				out[a.ID]++
			}
		}
	}
	return out
}

// offeredText lists offered operation ids with how often each was offered, sorted by id.
func offeredText(offered map[string]int) string {
	var parts []string
	for _, id := range sortedIntKeys(offered) {
		parts = append(parts, fmt.Sprintf("%s %d time%s", id, offered[id], plural(offered[id])))
	}
	return strings.Join(parts, ", ")
}

func decideUAIdempotent(ev *Evidence) []Finding {
	var out []Finding
	for _, h := range ev.Histories {
		out = append(out, uaIdempotentIn(ev, h)...)
	}
	return out
}

// performGroups groups the perform_user_action calls of a history by session, operation and the pending
// requirement the host read just before, in order of first call.
func performGroups(h *simulate.History) [][]callSite {
	groups := map[string]int{}
	var out [][]callSite
	last := map[string]*harness.Result{} // session -> last state read or performed
	// A consent change at the identity service starts a new requirement for its principal, even when the
	// new pending state reads the same as the old one.
	epoch := map[string]int{}
	for _, e := range h.Events {
		if e.Consent != nil {
			epoch[e.Consent.Principal]++
		}
		if e.Call == nil {
			continue
		}
		cs := callSite{h: h, c: e.Call, e: e}
		switch e.Call.Method {
		case simulate.CallReadUserActions:
			if st := stateOf(cs); st != nil {
				last[e.Call.Ctx.Session] = st
			}
		case simulate.CallPerformUserAction:
			before := last[e.Call.Ctx.Session]
			if st := stateOf(cs); st != nil {
				last[e.Call.Ctx.Session] = st
			}
			if before == nil || before.Ready {
				continue
			}
			action, _ := e.Call.Args["action_id"].(string)
			k := fmt.Sprintf("%s\x00%s\x00%d\x00%s", e.Call.Ctx.Session, action, epoch[e.Call.Ctx.Principal], stateKey(before))
			i, ok := groups[k]
			if !ok {
				i = len(out)
				groups[k] = i
				out = append(out, nil)
			}
			out[i] = append(out[i], cs)
		}
	}
	return out
}

// uaIdempotentIn compares the calls of each group of performGroups.
func uaIdempotentIn(ev *Evidence, h *simulate.History) []Finding {
	var out []Finding
	for _, calls := range performGroups(h) {
		g := struct{ calls []callSite }{calls}
		if len(g.calls) < 2 {
			continue
		}
		first := g.calls[0]
		action, _ := first.c.Args["action_id"].(string)
		loc := ev.methodLocation(simulate.CallPerformUserAction)
		// Same state for the same requirement.
		var ref *callSite
		for i := range g.calls {
			cs := g.calls[i]
			st := stateOf(cs)
			if st == nil {
				continue
			}
			if ref == nil {
				ref = &g.calls[i]
				continue
			}
			if stateKey(st) != stateKey(stateOf(*ref)) {
				msg := fmt.Sprintf("perform_user_action(%q) for session %s returned a different state for the same pending requirement (%s on %s, then %s on %s)",
					action, cs.c.Ctx.Session, ref.c.Key, ref.c.Replica, cs.c.Key, cs.c.Replica)
				out = append(out, Finding{Message: msg, Location: loc, Evidence: []report.Evidence{ev.evidence(*ref, "first answer", loc), ev.evidence(cs, msg, loc)}})
				break
			}
		}
		// No new external effect per call.
		written := map[string]bool{}
		keys := map[string]bool{} // idempotency keys and conditions earlier calls' writes carried
		for i, cs := range g.calls {
			var fresh []string
			for _, r := range requestsOf(cs) {
				if !r.Applied || !r.Class.Write {
					continue
				}
				w := strings.ToUpper(r.Method) + " " + r.Path
				if r.Class.Operation != "" { // an RPC: every write has one path
					w += " " + r.Class.Operation + " " + r.Class.Resource
				}
				// A write with an idempotency key or condition is judged by it (the same key is that write again,
				// a new key a new effect wherever it goes); one without, by its method and path.
				seenBefore := written[w]
				if r.Class.KeyID(r.Service) != "" {
					seenBefore = keyedBefore(keys, r)
				}
				if i > 0 && !seenBefore {
					fresh = append(fresh, w+describeKey(r))
				}
				written[w] = true
			}
			if len(fresh) > 0 {
				sort.Strings(fresh)
				msg := fmt.Sprintf("perform_user_action(%q) for session %s, called again for the same pending requirement (%s on %s), made %d new write(s) no earlier call made: %s",
					action, cs.c.Ctx.Session, cs.c.Key, cs.c.Replica, len(fresh), strings.Join(fresh, ", "))
				out = append(out, Finding{Message: msg, Location: loc, Evidence: []report.Evidence{ev.evidence(first, "first call for this requirement", loc), ev.evidence(cs, msg, loc)}})
				break
			}
		}
	}
	return out
}

// initialConsent returns the consent states a history's scenario starts with, from its typed facts; ok is
// false for a history that does not record them.
func initialConsent(h *simulate.History) (consent, onCheck map[string]string, ok bool) {
	if len(h.Principals) == 0 {
		return nil, nil, false
	}
	consent, onCheck = map[string]string{}, map[string]string{}
	for _, p := range h.Principals {
		consent[p.Principal] = p.Consent
		if p.OnCheck != "" {
			onCheck[p.Principal] = p.OnCheck
		}
	}
	return consent, onCheck, true
}

// uaBreach is a prepare_turn that went through while its principal's consent was pending.
type uaBreach struct {
	cs    callSite
	basis string
}

// pendingTurns walks a history and returns the prepare_turn calls for principals whose consent was pending
// at the double or at a declared service that holds it, split into those that went through and those that
// were refused.
func pendingTurns(h *simulate.History) (through []uaBreach, refused []callSite) {
	consent, onCheck, known := initialConsent(h)
	if !known {
		consent, onCheck = map[string]string{}, map[string]string{}
	}
	// held: principal -> the services that hold its consent, and the state the suite last set there (a
	// consent check at the double does not move it).
	held, heldState := map[string][]string{}, map[string]string{}
	for _, p := range h.Principals {
		if len(p.Services) > 0 {
			held[p.Principal], heldState[p.Principal] = p.Services, p.Consent
		}
	}
	// readPending: session -> the last state read said a prerequisite is pending (fallback when the
	// principal's consent is not known from the scenario).
	readPending := map[string]bool{}
	sessionOwner := map[string]string{}
	aware := prerequisitePrincipals(h)
	for _, e := range h.Events {
		if e.Consent != nil {
			p := e.Consent.Principal
			consent[p] = e.Consent.Consent
			if len(e.Consent.Services) > 0 {
				held[p], heldState[p] = e.Consent.Services, e.Consent.Consent
			}
			for sess, owner := range sessionOwner {
				if owner == p {
					delete(readPending, sess)
				}
			}
			continue
		}
		if e.Call == nil {
			continue
		}
		c := e.Call
		cs := callSite{h: h, c: c, e: e}
		if c.Ctx.Session != "" && c.Ctx.Principal != "" {
			sessionOwner[c.Ctx.Session] = c.Ctx.Principal
		}
		for _, r := range h.RequestsOf(c.Key) {
			p, found := strings.CutPrefix(r.Path, "/v1/consents/")
			if !found || strings.ToUpper(r.Method) != "POST" || r.Status != 200 {
				continue
			}
			p, found = strings.CutSuffix(p, "/check")
			if !found {
				continue
			}
			if s, ok := onCheck[p]; ok {
				consent[p] = s
				delete(onCheck, p)
			} else if !known {
				consent[p] = "" // a check may have changed it; only later state reads tell
			}
			for sess, owner := range sessionOwner {
				if owner == p {
					delete(readPending, sess)
				}
			}
		}
		switch c.Method {
		case simulate.CallReadUserActions, simulate.CallPerformUserAction:
			if st := stateOf(cs); st != nil {
				ua, ok := stateUserAction(st)
				readPending[c.Ctx.Session] = !st.Ready && ok && ua.Status == "pending"
			}
		case simulate.CallPrepareTurn:
			p := c.Ctx.Principal
			basis := ""
			switch {
			case !aware[p]:
				// The provider never consulted this principal's consent nor reported a user action for them,
				// and no service of its own holds consent: it has no such prerequisite, and the double's
				// answer does not concern it.
			case heldState[p] == simulate.ConsentPending:
				// The author declared that this service holds the prerequisite: its pending state binds
				// prepare_turn whether or not the provider asked the double.
				basis = heldBy(held[p]) + " held consent pending for principal " + p
			case consent[p] == simulate.ConsentPending:
				basis = "the identity service answered pending for principal " + p
			case consent[p] == "" && readPending[c.Ctx.Session]:
				basis = "the last user-action state read for session " + c.Ctx.Session + " said a prerequisite is pending"
			}
			if basis == "" {
				continue
			}
			if cs.returned() {
				through = append(through, uaBreach{cs: cs, basis: basis})
			} else if c.Outcome == simulate.OutcomeRaised {
				refused = append(refused, cs)
			}
		}
	}
	return through, refused
}

// heldBy names the services that held a prerequisite: "service a", "services a and b".
func heldBy(names []string) string {
	if len(names) == 1 {
		return "service " + names[0]
	}
	return "services " + strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// prerequisitePrincipals are the principals for whom the provider shows it has a prerequisite: it asked the
// consent service about them, raised or returned a user action for one of their Sessions, or a service of
// its own holds their consent (the author declared it: every principal the suite moved there).
func prerequisitePrincipals(h *simulate.History) map[string]bool {
	out := map[string]bool{}
	for _, p := range h.Principals {
		if len(p.Services) > 0 {
			out[p.Principal] = true
		}
	}
	for _, r := range h.Requests {
		if rest, ok := strings.CutPrefix(r.Path, "/v1/consents/"); ok {
			p, _, _ := strings.Cut(rest, "/")
			if p != "" {
				out[p] = true
			}
		}
	}
	for _, e := range h.Events {
		if e.Consent != nil && len(e.Consent.Services) > 0 {
			out[e.Consent.Principal] = true
		}
		if e.Call == nil || e.Call.Ctx.Principal == "" {
			continue
		}
		cs := callSite{h: h, c: e.Call, e: e}
		if raisedUserAction(cs) != nil {
			out[e.Call.Ctx.Principal] = true
		}
		if st := stateOf(cs); st != nil && !st.Ready {
			out[e.Call.Ctx.Principal] = true
		}
	}
	return out
}

// exUAAuthority needs a turn for a principal whose consent was pending, when the provider has a consent
// prerequisite at all.
func exUAAuthority(ev *Evidence) Exercise {
	t := newTally(callNoun(simulate.CallPrepareTurn))
	aware, met := 0, 0
	for _, h := range ev.Histories {
		aware += len(prerequisitePrincipals(h))
		for _, cs := range ev.callsIn(h, simulate.CallPrepareTurn) {
			label := ""
			if consentAt(h, cs.e, cs.c.Ctx.Principal) == simulate.ConsentPending {
				met++
				label = "for a principal whose consent was pending"
			}
			t.add(cs, label)
		}
	}
	if aware == 0 { // see hasPrerequisite
		return Exercise{Tally: t.report(), NotApplicable: "the provider never consulted a principal's consent nor raised or returned a user action: it has no prerequisite for prepare_turn to enforce"}
	}
	return need{reach: "a turn by a principal whose consent is pending reaches it"}.result(t, met)
}

func decideUAAuthority(ev *Evidence) []Finding {
	var through []uaBreach
	var refused []callSite
	for _, h := range ev.Histories {
		t, r := pendingTurns(h)
		through = append(through, t...)
		refused = append(refused, r...)
	}
	if len(through) == 0 {
		return nil
	}
	loc := ev.methodLocation(simulate.CallPrepareTurn)
	withRead, withoutRead := 0, 0
	for _, b := range through {
		if b.cs.c.Ctx.PriorStateRead {
			withRead++
		} else {
			withoutRead++
		}
	}
	refusedWithRead, refusedWithoutRead := 0, 0
	for _, cs := range refused {
		if cs.c.Ctx.PriorStateRead {
			refusedWithRead++
		} else {
			refusedWithoutRead++
		}
	}
	msg := fmt.Sprintf("prepare_turn let %d turn(s) through while the principal's consent was pending", len(through))
	switch {
	case withRead == 0 && refusedWithRead > 0:
		msg += fmt.Sprintf("; every such turn came without a prior user-action state read, while %d turn(s) after a state read were refused: the provider enforces the prerequisite only after read_user_actions ran", refusedWithRead)
	case withoutRead == 0 && refusedWithoutRead > 0:
		msg += fmt.Sprintf("; every such turn came after a user-action state read, while %d turn(s) without a prior read were refused: a state read must never grant permission", refusedWithoutRead)
	}
	var evs []report.Evidence
	for i, b := range through {
		if i == 5 {
			break
		}
		read := "without a prior state read"
		if b.cs.c.Ctx.PriorStateRead {
			read = "after a state read"
		}
		text := fmt.Sprintf("prepare_turn for session %s (attempt %s, %s) returned materials although %s", b.cs.c.Ctx.Session, b.cs.c.Ctx.Attempt, read, b.basis)
		evs = append(evs, ev.evidence(b.cs, text, loc))
	}
	return []Finding{{Message: msg, Location: loc, Evidence: evs}}
}
