package conformance

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/astrabox-dev/astrabox/internal/harness"
	"github.com/astrabox-dev/astrabox/internal/report"
	"github.com/astrabox-dev/astrabox/internal/simulate"
)

func init() {
	register(
		&Check{
			ID: "TURN-IDEMPOTENT", Title: "prepare_turn is idempotent for a dispatch attempt", Area: AreaTurn, Severity: report.SeverityError,
			Clauses: []string{"TURN-IDEMPOTENT"},
			Needs:   "a retry of an attempt that already had material", Exercise: exTurnRetry, Judges: judgesTurn,
			Rationale: "A reconnect retry of an engine write calls prepare_turn again with the same dispatch_attempt_id, possibly on another replica. The engine may already hold the first answer's material; a retry that issues a new credential or returns different bytes swaps material under a live write and piles up external credentials and records for one write. A retry may repeat a write the service itself makes idempotent: an exact repeat of a PUT or DELETE, or any write carrying the same idempotency key as one the attempt already sent (the Idempotency-Key header, recognised with no configuration; AWS's ClientToken and ClientRequestToken; a header, body field or query parameter the service declares with idempotency-key) or the same condition on the same resource (If-Match or a check-and-set field declared with conditional) counts once. A retry that mints a new key is a new write.",
			Hint:      "Store the attempt's material in the deployment under dispatch_attempt_id (create-if-absent) and return the stored material on every retry, on any replica; or derive the write's idempotency key from the attempt (never a new uuid per call) so the service answers a retry with the first answer.",
			Wrong:     "async def prepare_turn(self, *, context):\n    token = await self._issue(context.principal_id)  # a new credential on every retry\n    return RuntimeMaterials(files=(RuntimeFile(name=\"token.json\", content=token),))",
			Right:     "async def prepare_turn(self, *, context):\n    token = await self._store.get_or_create(context.dispatch_attempt_id,\n                                            lambda: self._issue(context.principal_id))\n    return RuntimeMaterials(files=(RuntimeFile(name=\"token.json\", content=token),))",
			Decide:    decideTurnIdempotent,
		},
		&Check{
			ID: "TURN-FILES-ONLY", Title: "prepare_turn refreshes delivered files only", Area: AreaTurn, Severity: report.SeverityError,
			Clauses: []string{"TURN-FILES-ONLY"},
			Needs:   "a prepare_turn that returned materials", Exercise: exTurnFilesOnly, Judges: judgesTurn,
			Rationale: "The engine's environment was fixed when prepare_session started it, so prepare_turn cannot change it: a non-empty environment fails the write. Turn files replace files at the paths prepare_session delivered; a name that was never delivered is a file no variable of the running engine points at.",
			Hint:      "Return only RuntimeFile entries whose names prepare_session returned for the Session, and no environment.",
			Wrong:     "return RuntimeMaterials(files=(RuntimeFile(name=\"token.json\", content=t),),\n                        environment={\"TOKEN_FILE\": context.file_path(\"token.json\")})",
			Right:     "return RuntimeMaterials(files=(RuntimeFile(name=\"token.json\", content=t),))",
			Decide:    decideTurnFilesOnly,
		},
		&Check{
			ID: "TURN-WITHIN-DEADLINE", Title: "prepare_turn finishes within its deadline and honours cancellation", Area: AreaTurn, Severity: report.SeverityError,
			Clauses: []string{"TURN-WITHIN-DEADLINE"},
			Needs:   "a fault-free prepare_turn with consent granted", Exercise: exFaultFreeTurn, Judges: judgesTurn,
			Rationale: "prepare_turn runs on the path of every engine write under a host-clock deadline. When the platform cancels it, the write is already refused; a callback that swallows the cancellation and keeps working, or never returns, holds the Session's guard and a worker for nothing and can still reach external systems after the platform gave up.",
			Hint:      "Derive request timeouts from context.deadline and let asyncio.CancelledError propagate (clean up, then re-raise).",
			Wrong:     "try:\n    return await self._prepare(context)\nexcept asyncio.CancelledError:\n    return await self._prepare(context)  # finishes anyway",
			Right:     "try:\n    return await self._prepare(context)\nexcept asyncio.CancelledError:\n    await self._close_pending()\n    raise",
			Decide:    decideTurnWithinDeadline,
		},
		&Check{
			ID: "TURN-VALIDITY-FRESH", Title: "A validity refresh returns fresh material and a valid period", Area: AreaTurn, Severity: report.SeverityError,
			Clauses: []string{"TURN-VALIDITY-FRESH"},
			Needs:   "a refresh of an attempt that already had material", Exercise: exRefresh, Judges: judgesTurn,
			Rationale: "With turn_validity_seconds the provider tells the platform when turn material expires; the platform calls prepare_turn with refresh=True before that moment while the write is live. A refresh that returns the same bytes leaves the expiring material in place, and a validity that is not a positive finite number (or missing after one was set) breaks the platform's refresh schedule and fails the write.",
			Hint:      "On refresh=True issue new material, store it for the attempt and return it with a positive, finite turn_validity_seconds.",
			Wrong:     "if context.refresh:\n    return self._cached[context.dispatch_attempt_id]  # the expiring material again",
			Right:     "if context.refresh:\n    material = await self._renew(context)\n    return RuntimeMaterials(files=material.files, turn_validity_seconds=240.0)",
			Decide:    decideTurnValidityFresh,
		},
	)
}

// attemptKey identifies one write attempt of one Session in one scenario.
type attemptKey struct {
	h       *simulate.History
	session string
	attempt string
}

// fileSet is the material of a result by file name.
func fileSet(m *harness.Result) map[string][]byte {
	out := make(map[string][]byte, len(m.Files))
	for _, f := range m.Files {
		out[f.Name] = f.Content
	}
	return out
}

// materialDiff describes how two results' files differ, or "" when they are equivalent (same names and bytes).
func materialDiff(before, after map[string][]byte) string {
	var names []string
	for n := range before {
		names = append(names, n)
	}
	for n := range after {
		if _, ok := before[n]; !ok {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	var diffs []string
	for _, n := range names {
		a, inA := before[n]
		b, inB := after[n]
		switch {
		case !inA:
			diffs = append(diffs, "adds file "+shortName(n))
		case !inB:
			diffs = append(diffs, "drops file "+shortName(n))
		case !bytes.Equal(a, b):
			diffs = append(diffs, "file "+shortName(n)+" has different bytes")
		}
	}
	return strings.Join(diffs, ", ")
}

// idempotentMethod tells whether repeating a write with the same method, path and body changes nothing more
// (PUT and DELETE); a repeated POST creates again (a second credential, a second record).
func idempotentMethod(method string) bool {
	m := strings.ToUpper(method)
	return m == "PUT" || m == "DELETE"
}

// newKeyNote explains, for a write that carried an idempotency key or condition, that no earlier write of
// the attempt carried it: a retry that mints a new key per attempt is a new write.
func newKeyNote(r simulate.Request) string {
	if d := describeKey(r); d != "" {
		return "; its key" + d + " is new, so the service counts it as another write (reuse the attempt's key on every retry)"
	}
	return ""
}

// writeSignature identifies an external write by what it did, so that an exact repeat compares equal.
func writeSignature(r simulate.Request) string {
	body := r.RawBody()
	if len(body) == 0 {
		body = r.Body
	}
	return strings.ToUpper(r.Method) + " " + r.Path + " " + string(simulate.CanonicalJSON(body))
}

// exTurnRetry needs a retry of an attempt that already had material.
func exTurnRetry(ev *Evidence) Exercise {
	t := newTally(callNoun(simulate.CallPrepareTurn))
	met := 0
	for _, h := range ev.Histories {
		answered := map[attemptKey]string{} // -> replica of the first answer
		for _, cs := range ev.callsIn(h, simulate.CallPrepareTurn) {
			k := attemptKey{h, cs.c.Ctx.Session, cs.c.Ctx.Attempt}
			var labels []string
			if cs.c.Ctx.Refresh {
				labels = append(labels, "refreshes")
			} else if first, ok := answered[k]; ok {
				met++
				labels = append(labels, "retries of an answered attempt")
				if first != cs.c.Replica {
					labels = append(labels, "on another replica")
				}
			}
			if _, ok := answered[k]; !ok && cs.materials() != nil {
				answered[k] = cs.c.Replica
			}
			t.add(cs, labels...)
		}
	}
	return need{reach: "a retry step with the same dispatch attempt after a turn returned material reaches it"}.result(t, met)
}

func decideTurnIdempotent(ev *Evidence) []Finding {
	type state struct {
		latest   map[string][]byte
		from     *simulate.CallRecord
		writes   map[string]bool
		keys     map[string]bool // the idempotency keys and conditions the attempt's writes carried
		answered bool
	}
	var out []Finding
	seen := map[string]bool{}
	for _, h := range ev.Histories {
		states := map[attemptKey]*state{}
		for _, cs := range ev.callsIn(h, simulate.CallPrepareTurn) {
			c := cs.c
			k := attemptKey{h, c.Ctx.Session, c.Ctx.Attempt}
			st := states[k]
			if st == nil {
				st = &state{writes: map[string]bool{}, keys: map[string]bool{}}
				states[k] = st
			}
			m := cs.materials()
			if !c.Ctx.Refresh && st.answered {
				if m != nil {
					if d := materialDiff(st.latest, fileSet(m)); d != "" && !seen["m|"+h.Scenario+"|"+c.Ctx.Attempt] {
						seen["m|"+h.Scenario+"|"+c.Ctx.Attempt] = true
						loc := ev.methodLocation(simulate.CallPrepareTurn)
						msg := fmt.Sprintf("a retry of attempt %s of session %s on %s returned material different from what the attempt got on %s (%s): %s",
							c.Ctx.Attempt, c.Ctx.Session, c.Replica, st.from.Replica, st.from.Key, d)
						out = append(out, Finding{Message: msg, Location: loc, Evidence: []report.Evidence{ev.evidence(cs, msg, loc)}})
					}
				}
				for _, r := range requestsOf(cs) {
					if !r.Applied || !r.Class.Write || (idempotentMethod(r.Method) && st.writes[writeSignature(r)]) {
						continue
					}
					if id := r.Class.KeyID(r.Service); id != "" && st.keys[id] {
						continue // the same idempotency key (or condition) as a write the attempt made: the same write
					}
					if r.Forbidden {
						continue // a dispatch or registration is GEN-NO-DISPATCH's breach, whenever it happens
					}
					key := "w|" + h.Scenario + "|" + c.Ctx.Attempt + "|" + string(r.Method) + " " + r.Path
					if seen[key] {
						continue
					}
					seen[key] = true
					loc := ev.methodLocation(simulate.CallPrepareTurn)
					msg := fmt.Sprintf("a retry of attempt %s of session %s on %s made a new external write after the attempt already had its material: %s%s",
						c.Ctx.Attempt, c.Ctx.Session, c.Replica, describeRequest(r), newKeyNote(r))
					out = append(out, Finding{Message: msg, Location: loc, Evidence: []report.Evidence{ev.evidence(cs, msg, loc)}})
				}
			}
			// Every write the attempt sent counts, applied or not: a retry repeating exactly the PUT an earlier
			// call sent (and a 503 refused) is not a duplicate.
			for _, r := range requestsOf(cs) {
				if r.Class.Write {
					st.writes[writeSignature(r)] = true
					if id := r.Class.KeyID(r.Service); id != "" {
						st.keys[id] = true
					}
				}
			}
			if m != nil {
				st.latest, st.from, st.answered = fileSet(m), c, true
			}
		}
	}
	return out
}

// callsIn returns the calls of one history of the given methods, in order.
func (ev *Evidence) callsIn(h *simulate.History, methods ...simulate.Callback) []callSite {
	var out []callSite
	for _, e := range h.Events {
		if e.Call != nil && slices.Contains(methods, e.Call.Method) {
			out = append(out, callSite{h: h, c: e.Call, e: e})
		}
	}
	return out
}

// exTurnFilesOnly needs a turn's materials returned for a Session whose prepare_session delivered.
var exTurnFilesOnly = needCalls(need{calls: judgesTurn, label: "returned materials",
	met:   func(_ *Evidence, cs callSite) bool { return cs.materials() != nil },
	reach: "a turn with consent granted reaches it"})

func decideTurnFilesOnly(ev *Evidence) []Finding {
	var out []Finding
	seen := map[string]bool{}
	for _, h := range ev.Histories {
		delivered := map[string]map[string]bool{} // session -> names its latest prepare_session delivered
		sessionCall := map[string]string{}        // prepare_session call key -> session
		for _, e := range h.Events {
			if d := e.Delivery; e.Kind == simulate.EventDelivery && d != nil {
				if s, ok := sessionCall[d.From]; ok && delivered[s] != nil {
					delivered[s][d.Name] = true
				}
				continue
			}
			c := e.Call
			if c == nil {
				continue
			}
			cs := callSite{h: h, c: c, e: e}
			switch c.Method {
			case simulate.CallPrepareSession:
				if cs.materials() != nil {
					delivered[c.Ctx.Session] = map[string]bool{}
					sessionCall[c.Key] = c.Ctx.Session
				}
			case simulate.CallPrepareTurn:
				m := cs.materials()
				if m == nil {
					continue
				}
				loc := ev.methodLocation(simulate.CallPrepareTurn)
				if len(m.Environment) > 0 && !seen["env"] {
					seen["env"] = true
					msg := fmt.Sprintf("prepare_turn returned an environment (%s); turn preparation returns files only and a non-empty environment fails the write (%s)",
						strings.Join(slices.Sorted(maps.Keys(m.Environment)), ", "), sessionLabel(c))
					out = append(out, Finding{Message: msg, Location: loc, Evidence: []report.Evidence{ev.evidence(cs, msg, loc)}})
				}
				for _, f := range m.Files {
					if delivered[c.Ctx.Session][f.Name] || seen["file|"+f.Name] {
						continue
					}
					seen["file|"+f.Name] = true
					msg := fmt.Sprintf("prepare_turn returned the file %s, which prepare_session did not deliver for session %s (%s)",
						shortName(f.Name), c.Ctx.Session, sessionLabel(c))
					out = append(out, Finding{Message: msg, Location: loc, Evidence: []report.Evidence{ev.evidence(cs, msg, loc)}})
				}
			}
		}
	}
	return out
}

// turnProcessFailure explains a process death that prepare_turn caused, or "".
func turnProcessFailure(c *simulate.CallRecord) string {
	if harness.ErrorKind(c.ProcessKind) == harness.KindHung {
		return "did not settle within the grace period after the platform cancelled it, and the replica was killed"
	}
	return processFailure(c)
}

// exFaultFreeTurn needs a fault-free prepare_turn with consent granted.
var exFaultFreeTurn = needCalls(need{calls: judgesTurn, label: "fault-free",
	met: func(ev *Evidence, cs callSite) bool { return ev.faultFree(cs) },
	also: func(_ *Evidence, cs callSite) []string {
		if cancelledCall(cs.c) {
			return []string{"cancelled by the platform"}
		}
		return nil
	},
	reach: "a turn step without a fault, by a principal whose consent is granted, reaches it"})

func decideTurnWithinDeadline(ev *Evidence) []Finding {
	var out []Finding
	seen := map[string]bool{}
	for _, cs := range ev.calls(simulate.CallPrepareTurn) {
		c := cs.c
		var msg string
		warning := false
		loc := ev.methodLocation(simulate.CallPrepareTurn)
		switch c.Outcome {
		case simulate.OutcomeOverran:
			ended := "settled"
			switch {
			case c.Result != nil:
				ended = "returned " + c.Result.Name()
			case c.Error != nil:
				ended = "raised " + c.Error.Type
				loc = ev.errorLocation(cs)
			}
			if !waitedPastCancel(cs) && !providerOverrides(ev, simulate.CallPrepareTurn) {
				continue // the platform's default returns at once; a late reply only crossed the cancel
			}
			if waitedPastCancel(cs) {
				msg = fmt.Sprintf("prepare_turn ignored the platform's cancellation and %s instead of ending cancelled", ended)
			} else {
				// The reply may have crossed the cancellation on the wire: not proof of an ignored cancel.
				warning = true
				msg = fmt.Sprintf("prepare_turn %s after the platform had sent its cancellation instead of ending cancelled; it either ignored the cancellation or finished just as it was sent", ended)
			}
		case simulate.OutcomeCancelled:
			if !ev.faultFree(cs) || !providerOverrides(ev, simulate.CallPrepareTurn) {
				continue // cancelled by an injected fault: the cancellation was honoured
			}
			msg = fmt.Sprintf("prepare_turn did not finish within its deadline with no fault injected and consent granted; the platform cancelled it and refused the write (scenario %s step %d)", cs.h.Scenario, cs.e.Step)
		case simulate.OutcomeDied:
			why := turnProcessFailure(c)
			if why == "" {
				continue
			}
			msg = "prepare_turn " + why
		default:
			continue
		}
		msg += fmt.Sprintf(" (deadline %gs, %s)", c.DeadlineS, sessionLabel(c))
		key := fmt.Sprintf("%s|%s|%v", c.Outcome, c.ProcessKind, warning)
		if seen[key] {
			continue
		}
		seen[key] = true
		out = append(out, Finding{Warning: warning, Message: msg, Location: loc, Evidence: []report.Evidence{ev.evidence(cs, msg, loc)}})
	}
	return out
}

// providerOverrides tells whether the provider defines a callback itself (true when unknown).
func providerOverrides(ev *Evidence, method simulate.Callback) bool {
	if ev.Load == nil {
		return true
	}
	m, ok := ev.Load.Methods[string(method)]
	return !ok || m.Overridden
}

// waitedPastCancel tells whether an overrunning call was provably still running when the platform cancelled
// it: it was waiting on a deployment request the double slowed down (the deadline scenarios delay requests
// well past the cancellation), so its late reply cannot have crossed the cancel on the wire.
func waitedPastCancel(cs callSite) bool {
	for _, r := range requestsOf(cs) {
		if r.Delayed {
			return true
		}
	}
	return false
}

// exRefresh needs a refresh of an attempt that already had material, when the provider sets a validity.
func exRefresh(ev *Evidence) Exercise {
	t := newTally(callNoun(simulate.CallPrepareTurn))
	met, finite := 0, 0
	longest := 0.0
	for _, cs := range ev.calls(simulate.CallPrepareTurn) {
		label := ""
		if m := cs.materials(); m != nil {
			if tv := m.Validity(); tv.Valid() {
				finite++
				longest = max(longest, tv.Seconds)
			}
		}
		if cs.c.Ctx.Refresh {
			met++
			label = "refreshes"
		}
		t.add(cs, label)
	}
	if finite == 0 && met == 0 {
		return Exercise{Tally: t.report(), NotApplicable: "prepare_turn never returned a finite turn_validity_seconds, so the platform never refreshes turn material"}
	}
	return need{reach: fmt.Sprintf("a write kept live for more than twice the validity the provider returned (up to %gs) reaches it", longest)}.result(t, met)
}

func decideTurnValidityFresh(ev *Evidence) []Finding {
	type prev struct {
		files    map[string][]byte
		validity bool
		c        *simulate.CallRecord
	}
	var out []Finding
	seen := map[string]bool{}
	for _, h := range ev.Histories {
		latest := map[attemptKey]*prev{}
		for _, cs := range ev.callsIn(h, simulate.CallPrepareTurn) {
			c := cs.c
			m := cs.materials()
			if m == nil {
				continue
			}
			k := attemptKey{h, c.Ctx.Session, c.Ctx.Attempt}
			tv := m.Validity()
			set, problem := tv.Set, tv.Problem
			files := fileSet(m)
			type issue struct{ kind, msg string }
			var msgs []issue
			if problem != "" {
				msgs = append(msgs, issue{"invalid", fmt.Sprintf("prepare_turn returned turn_validity_seconds that %s; it must be a positive, finite number or None", problem)})
			}
			if p := latest[k]; c.Ctx.Refresh && p != nil {
				if !set && p.validity {
					msgs = append(msgs, issue{"missing", fmt.Sprintf("a refresh of attempt %s returned no turn_validity_seconds although the material it renews (%s) had one", c.Ctx.Attempt, p.c.Key)})
				}
				if len(p.files) > 0 && materialDiff(p.files, files) == "" {
					msgs = append(msgs, issue{"stale", fmt.Sprintf("a refresh of attempt %s returned the same material, byte for byte, as the call it renews (%s on %s)", c.Ctx.Attempt, p.c.Key, p.c.Replica)})
				}
			}
			for _, is := range msgs {
				if seen[is.kind] {
					continue
				}
				seen[is.kind] = true
				msg := is.msg + " (" + sessionLabel(c) + ")"
				loc := ev.methodLocation(simulate.CallPrepareTurn)
				out = append(out, Finding{Message: msg, Location: loc, Evidence: []report.Evidence{ev.evidence(cs, msg, loc)}})
			}
			latest[k] = &prev{files: files, validity: set && problem == "", c: c}
		}
	}
	return out
}
