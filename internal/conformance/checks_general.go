package conformance

import (
	"fmt"
	"slices"
	"strings"

	"github.com/astrabox-dev/astrabox/internal/harness"
	"github.com/astrabox-dev/astrabox/internal/report"
	"github.com/astrabox-dev/astrabox/internal/simulate"
)

func init() {
	register(
		&Check{
			ID: "GEN-NO-DISPATCH", Title: "No dispatch, consent flow, Agent registration or background write", Area: AreaGeneral, Severity: report.SeverityError,
			Clauses: []string{"GEN-NO-DISPATCH"},
			Needs:   "a call of a callback the provider defines", Exercise: exAnyCall, Judges: judgesAll,
			Rationale: "Callbacks prepare runtimes; they never act on the user's behalf. Dispatching input, starting a consent flow or registering an Agent from a callback does what only the platform or the user may do, and writes left running in the background after a callback returned escape the platform's deadlines, fences and recovery.",
			Hint:      "Only read and write your own records and issue credentials inside the callback; await every write before returning.",
			Wrong:     "async def prepare_turn(self, *, context):\n    materials = await self._materials(context)\n    asyncio.get_running_loop().create_task(self._post(\"/v1/dispatch\", {...}))\n    return materials",
			Right:     "async def prepare_turn(self, *, context):\n    return await self._materials(context)",
			Decide:    decideGenNoDispatch,
		},
		&Check{
			ID: "GEN-CANCEL-CLEAN", Title: "Cancellation leaves no outstanding writes", Area: AreaGeneral, Severity: report.SeverityError,
			Clauses: []string{"GEN-CANCEL-CLEAN"},
			Needs:   "a callback the platform cancelled", Exercise: exCancelled, Judges: judgesAll,
			Rationale: "When the platform cancels a callback (its deadline passed, or the step was cancelled) it treats the callback as over and may retry elsewhere. A write made by work the callback started and did not wait for lands whenever that work gets to it, racing the retry and the platform's view of what happened; that it landed before the callback ended in one run is luck, so the kit judges who issued the write, not when it landed.",
			Hint:      "A write whose request was sent goes on at the service when the await on it is cancelled: run each write as a task (or executor job) and shield it, and on CancelledError wait for it, and for every thread, job or task the callback started, before re-raising (cancelling a future does not stop a running job, nor a sent request).",
			Wrong:     "async def prepare_turn(self, *, context):\n    resp = await self._client.put(url, json=doc)  # cancelled mid-request: the PUT still lands\n    token = await asyncio.to_thread(self._issue_blocking, context)  # the thread keeps writing after cancel",
			Right:     "async def prepare_turn(self, *, context):\n    write = asyncio.ensure_future(self._client.put(url, json=doc))\n    try:\n        resp = await asyncio.shield(write)\n    except asyncio.CancelledError:\n        await asyncio.wait([write])  # the write has landed or failed: nothing outstanding\n        raise",
			Decide:    decideGenCancelClean,
		},
		&Check{
			ID: "GEN-SETTLES", Title: "Every callback settles in a live process", Area: AreaGeneral, Severity: report.SeverityError,
			Clauses: []string{"GEN-SETTLES"},
			Needs:   "a fault-free callback with consent granted", Exercise: exFaultFree, Judges: judgesAll,
			Rationale: "Callbacks run in the platform's own process, on its event loop. A callback that blocks the loop, exits the process, crashes it or exhausts its memory takes down every other Session served by that process, not just the point it was called for.",
			Hint:      "Never block the event loop (use await asyncio.sleep, async clients or asyncio.to_thread), never call sys.exit/os._exit, and bound memory use.",
			Wrong:     "async def prepare_session(self, *, context):\n    time.sleep(3600)  # blocks the platform's event loop",
			Right:     "async def prepare_session(self, *, context):\n    await asyncio.sleep(0.1)",
			Decide:    decideGenSettles,
		},
	)
}

// bgEvidence is an evidence entry for something that happened outside any callback.
func bgEvidence(h *simulate.History, replica, text string, loc *report.Location) report.Evidence {
	return report.Evidence{Text: text, Scenario: h.Scenario, Replica: replica, Location: loc}
}

// settledNormally reports whether a call ended on its own (returned or raised) without being cancelled.
func settledNormally(c *simulate.CallRecord) bool {
	return (c.Outcome == simulate.OutcomeReturned || c.Outcome == simulate.OutcomeRaised) && !c.CancelSent
}

// cancelledCall reports whether the platform cancelled a call.
func cancelledCall(c *simulate.CallRecord) bool {
	return c.Outcome == simulate.OutcomeCancelled || c.Outcome == simulate.OutcomeOverran || c.CancelSent
}

// leftBehindSummary describes what a callback left running, or "".
func leftBehindSummary(l harness.Leftovers) string {
	var parts []string
	for _, t := range l.Threads {
		parts = append(parts, "thread "+t.Name)
	}
	for _, t := range l.Tasks {
		parts = append(parts, "task "+t.Name)
	}
	for range l.Timers {
		parts = append(parts, "timer")
	}
	for _, c := range l.Children {
		parts = append(parts, fmt.Sprintf("child process %d", c.PID))
	}
	if len(parts) > 4 {
		parts = append(parts[:4], fmt.Sprintf("and %d more", len(parts)-4))
	}
	return strings.Join(parts, ", ")
}

// leftoverLocation is where a callback started the first leftover it knows the place of.
func leftoverLocation(l harness.Leftovers) *report.Location {
	for _, t := range l.Threads {
		if t.File != "" {
			return at(t.File, t.Line)
		}
	}
	for _, t := range l.Tasks {
		if t.File != "" {
			return at(t.File, t.Line)
		}
	}
	return nil
}

func decideGenNoDispatch(ev *Evidence) []Finding {
	d := &noDispatch{ev: ev, seen: map[string]bool{}}
	for _, h := range ev.Histories {
		d.h, d.byKey, d.order, d.quiescent = h, map[string]callSite{}, nil, map[int64]bool{}
		for _, e := range h.Events {
			if e.Call != nil {
				cs := callSite{h: h, c: e.Call, e: e}
				d.byKey[e.Call.Key] = cs
				d.order = append(d.order, cs)
			}
		}
		// Writes SYNC-QUIESCENT already blames on a synchronize that returned are left to it.
		for _, cs := range d.order {
			if cs.c.Is(simulate.CallSynchronize) && cs.c.Outcome == simulate.OutcomeReturned {
				for _, r := range syncLateWrites(cs) {
					d.quiescent[r.Seq] = true
				}
			}
		}
		d.forbidden()
		d.lateAfterSettled()
		d.background()
	}
	return d.out
}

// noDispatch is the state of GEN-NO-DISPATCH over the histories: the findings so far, the keys already
// reported, and the current history's calls.
type noDispatch struct {
	ev        *Evidence
	out       []Finding
	seen      map[string]bool
	h         *simulate.History
	byKey     map[string]callSite
	order     []callSite
	quiescent map[int64]bool
}

// forbidden reports requests to endpoints a provider must never call.
func (d *noDispatch) forbidden() {
	ev, h, byKey, seen := d.ev, d.h, d.byKey, d.seen
	for _, r := range h.Requests {
		if !r.Forbidden {
			continue
		}
		cs, ok := byKey[r.Call]
		method := r.Callback
		if method == "" {
			method = "background work"
		}
		key := "forbidden|" + method + "|" + string(r.Method) + " " + r.Path
		if seen[key] {
			continue
		}
		seen[key] = true
		msg := fmt.Sprintf("%s called an endpoint a provider must never call: %s", method, describeRequest(r))
		if ok {
			loc := ev.methodLocation(cs.c.Method)
			d.out = append(d.out, Finding{Message: msg, Location: loc, Evidence: []report.Evidence{ev.evidence(cs, msg, loc)}})
		} else {
			d.out = append(d.out, Finding{Message: msg, Evidence: []report.Evidence{bgEvidence(h, r.Replica, msg, nil)}})
		}
	}
}

// lateWrites returns writes attributed to a call that the double applied after the call settled.
func lateWrites(cs callSite) []simulate.Request {
	var out []simulate.Request
	for _, r := range requestsOf(cs) {
		if r.Applied && r.ApplyOrder > cs.c.ApplyMark {
			out = append(out, r)
		}
	}
	return out
}

// issuedAfterEnd returns the applied writes attributed to a call that its work issued after the callback's
// own code had ended (returned, raised or was cancelled), wherever they landed.
func issuedAfterEnd(cs callSite) []simulate.Request {
	var out []simulate.Request
	for _, r := range requestsOf(cs) {
		if r.Applied && r.Issuer != nil && r.Issuer.AfterEnd {
			out = append(out, r)
		}
	}
	return out
}

// mergeRequests returns the requests of a and b, each once (by Seq), in Seq order.
func mergeRequests(a, b []simulate.Request) []simulate.Request {
	seen := map[int64]bool{}
	var out []simulate.Request
	for _, r := range append(append([]simulate.Request(nil), a...), b...) {
		if !seen[r.Seq] {
			seen[r.Seq] = true
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(x, y simulate.Request) int { return int(x.Seq - y.Seq) })
	return out
}

// lateAfterSettled reports writes of a callback that returned or raised on its own that its work issued after
// the callback's code had ended (a harness fact, wherever they landed) or that landed after the platform took
// its reply.
func (d *noDispatch) lateAfterSettled() {
	ev, order, seen, quiescent := d.ev, d.order, d.seen, d.quiescent
	for _, cs := range order {
		if !settledNormally(cs.c) {
			continue
		}
		var late []simulate.Request
		for _, r := range mergeRequests(lateWrites(cs), issuedAfterEnd(cs)) {
			if !quiescent[r.Seq] {
				late = append(late, r)
			}
		}
		if len(late) == 0 {
			continue
		}
		key := "late|" + string(cs.c.Method)
		if seen[key] {
			continue
		}
		seen[key] = true
		obs := ev.allObservations(cs)
		loc := leftoverLocation(obs.Leftovers)
		if loc == nil {
			loc = ev.methodLocation(cs.c.Method)
		}
		msg := fmt.Sprintf("%s %s, but %d of its write(s) landed afterwards (first: %s)", cs.c.Method, cs.c.Outcome, len(late), describeRequest(late[0]))
		if s := leftBehindSummary(obs.Leftovers); s != "" {
			msg += "; it left running: " + s
		}
		d.out = append(d.out, Finding{Message: msg, Location: loc, Evidence: []report.Evidence{ev.evidence(cs, msg, loc)}})
	}
}

// background reports writes made while no callback ran, blaming the last callback on that replica that left
// work running.
func (d *noDispatch) background() {
	ev, h, order, seen, quiescent := d.ev, d.h, d.order, d.seen, d.quiescent
	for _, r := range h.Requests {
		if r.Call != "" || !r.Applied || !r.Class.Write || r.Forbidden || quiescent[r.Seq] {
			continue
		}
		key := "background|" + r.Replica
		if seen[key] {
			continue
		}
		seen[key] = true
		msg := fmt.Sprintf("a write reached the deployment double from replica %s while no callback ran there: %s", r.Replica, describeRequest(r))
		// Blame the last callback on that replica that left work running.
		var blame *callSite
		for i := range order {
			cs := order[i]
			if cs.c.Replica != r.Replica {
				continue
			}
			if !ev.allObservations(cs).Leftovers.Empty() {
				blame = &order[i]
			}
		}
		if blame != nil {
			obs := ev.allObservations(*blame)
			loc := leftoverLocation(obs.Leftovers)
			if loc == nil {
				loc = ev.methodLocation(blame.c.Method)
			}
			msg += fmt.Sprintf("; %s left running: %s", blame.c.Method, leftBehindSummary(obs.Leftovers))
			d.out = append(d.out, Finding{Message: msg, Location: loc, Evidence: []report.Evidence{ev.evidence(*blame, msg, loc)}})
			continue
		}
		d.out = append(d.out, Finding{Message: msg, Evidence: []report.Evidence{bgEvidence(h, r.Replica, msg, nil)}})
	}
}

// exCancelled needs a callback the platform cancelled; a provider that never talks to the deployment has
// nothing a cancellation could leave outstanding.
func exCancelled(ev *Evidence) Exercise {
	ex := needCalls(need{label: "cancelled by the platform",
		met: func(_ *Evidence, cs callSite) bool {
			return cancelledCall(cs.c) && cs.c.Outcome != simulate.OutcomeHostLoss
		},
		reach: "a step with a timeout or cancel fault on a callback the provider defines, while it waits on a request, reaches it"})(ev)
	if !ex.Met && !ev.providerRequests() {
		ex.NotApplicable = "the provider made no request to the deployment from any callback: a cancellation has no write of its own it could leave outstanding"
	}
	return ex
}

// unwaited reports whether a request attributed to a call was issued by work the callback did not wait for:
// after its own code had ended, or by a unit it started (a thread, executor job or task) that it never
// waited for (joined, took the result of, awaited to a normal end). Both are facts of the harness's own
// order of events, so they hold whenever the write lands, before the platform took the reply or after.
func unwaited(c *simulate.CallRecord, r simulate.Request) bool {
	is := r.Issuer
	if is == nil {
		return false
	}
	return is.AfterEnd || (is.Started() && !slices.Contains(c.Waited, is.Unit))
}

// outstandingWrites returns the applied writes attributed to a call that it left outstanding: issued by
// work it did not wait for (unwaited), or landed after the platform took its reply, in request order.
func outstandingWrites(cs callSite) []simulate.Request {
	var out []simulate.Request
	for _, r := range requestsOf(cs) {
		if r.Applied && (r.ApplyOrder > cs.c.ApplyMark || unwaited(cs.c, r)) {
			out = append(out, r)
		}
	}
	return out
}

// describeIssuer says which of a call's work issued a request, or "" when it was the callback's own code.
func describeIssuer(method simulate.Callback, r simulate.Request) string {
	is := r.Issuer
	if is == nil {
		return ""
	}
	var who string
	switch {
	case is.Started():
		who = fmt.Sprintf("%s %d of %s", workNoun(is.Kind), is.Unit, method)
	case is.Kind == harness.WorkLoop:
		who = "a loop callback of " + string(method)
	default:
		who = string(method) + "'s own task"
	}
	if is.AfterEnd {
		return "issued by " + who + " after " + string(method) + " had ended"
	}
	return "issued by " + who + ", which " + string(method) + " never waited for"
}

// workNoun names a unit kind in a message.
func workNoun(k harness.WorkKind) string {
	switch k {
	case harness.WorkJob:
		return "executor job"
	case harness.WorkThread, harness.WorkTimer, harness.WorkTask:
		return string(k)
	}
	return "unit"
}

func decideGenCancelClean(ev *Evidence) []Finding {
	var out []Finding
	seen := map[string]bool{}
	for _, cs := range ev.calls() {
		if !cancelledCall(cs.c) || cs.c.Outcome == simulate.OutcomeHostLoss || cs.c.Outcome == simulate.OutcomeDied {
			continue
		}
		late := outstandingWrites(cs)
		if len(late) == 0 {
			continue
		}
		if seen[string(cs.c.Method)] {
			continue
		}
		seen[string(cs.c.Method)] = true
		obs := ev.allObservations(cs)
		loc := leftoverLocation(obs.Leftovers)
		if loc == nil {
			loc = ev.methodLocation(cs.c.Method)
		}
		var ws []string
		for i, r := range late {
			if i == 3 {
				ws = append(ws, fmt.Sprintf("and %d more", len(late)-3))
				break
			}
			w := describeRequest(r)
			switch {
			case unwaited(cs.c, r):
				w += ", " + describeIssuer(cs.c.Method, r)
			default:
				w += ", landed after it settled"
			}
			ws = append(ws, w)
		}
		msg := fmt.Sprintf("%s was cancelled by the platform (%s) but left %d of its write(s) outstanding: %s", cs.c.Method, cs.c.Outcome, len(late), strings.Join(ws, "; "))
		if s := leftBehindSummary(obs.Leftovers); s != "" {
			msg += "; it left running: " + s
		}
		out = append(out, Finding{Message: msg, Location: loc, Evidence: []report.Evidence{ev.evidence(cs, msg, loc)}})
	}
	return out
}

// processFailure explains a process death that is the provider's doing, or "".
func processFailure(c *simulate.CallRecord) string {
	switch harness.ErrorKind(c.ProcessKind) {
	case harness.KindHung:
		return "never settled: it blocked the process (the event loop did not answer cancellation) and the replica was killed"
	case harness.KindExited:
		return "made the process exit"
	case harness.KindSignaled:
		return "made the process die on a signal"
	case harness.KindMemoryLimit:
		if c.MemoryLimit > 0 {
			return fmt.Sprintf("exceeded the memory bound: the replica's processes reached %d MiB resident, over the bound of %d MiB, and the replica was killed", c.MemoryRSS>>20, c.MemoryLimit>>20)
		}
		return "exceeded the memory bound, and the replica was killed"
	}
	return ""
}

// processDeath explains any process death a callback ended in: the provider's doing (processFailure), or
// the replica breaking the harness protocol, closing its channels or failing to start. None of them is a
// settled callback, so none may pass.
func processDeath(c *simulate.CallRecord) string {
	if why := processFailure(c); why != "" {
		return why
	}
	detail := ""
	if c.ProcessError != "" {
		detail = ": " + c.ProcessError
	}
	switch harness.ErrorKind(c.ProcessKind) {
	case harness.KindProtocol:
		return "ended with the replica breaking the harness protocol (the process wrote to, closed or replaced the harness's channels)" + detail
	case harness.KindClosed:
		return "ended with the replica's process already closed (it died or closed its channels earlier)" + detail
	default:
		return "could not run: the replica process did not start" + detail
	}
}

// exFaultFree needs a fault-free call of a callback the provider defines.
var exFaultFree = needCalls(need{label: "fault-free",
	met: func(ev *Evidence, cs callSite) bool { return ev.faultFree(cs) },
	also: func(ev *Evidence, cs callSite) []string {
		if ev.faultFree(cs) && cs.c.Outcome != simulate.OutcomeReturned {
			return []string{"fault-free that did not return"}
		}
		return nil
	},
	reach: "any step without a fault reaches it"})

// decideGenSettles fails every callback that did not settle: a process death of any kind, and, in a step
// without an injected fault and with consent granted, a raise, a cancellation at the deadline (prepare_turn
// is TURN-WITHIN-DEADLINE's) or a value the platform cannot take.
func decideGenSettles(ev *Evidence) []Finding {
	var out []Finding
	seen := map[string]bool{}
	add := func(cs callSite, key, msg string, loc *report.Location) {
		if seen[key] {
			return
		}
		seen[key] = true
		out = append(out, Finding{Message: msg, Location: loc, Evidence: []report.Evidence{ev.evidence(cs, msg, loc)}})
	}
	for _, cs := range ev.calls() {
		c := cs.c
		where := fmt.Sprintf(" (deadline %gs, scenario %s step %d)", c.DeadlineS, cs.h.Scenario, cs.e.Step)
		if c.Outcome == simulate.OutcomeDied {
			add(cs, string(c.Method)+"|died|"+c.ProcessKind, fmt.Sprintf("%s %s%s%s", c.Method, processDeath(c), where, waitingOn(cs)), ev.methodLocation(c.Method))
			continue
		}
		if p := malformed(c); p != "" {
			add(cs, string(c.Method)+"|malformed", fmt.Sprintf("%s returned %s the platform cannot take: %s%s", c.Method, c.Result.Name(), p, where), ev.methodLocation(c.Method))
		}
		if !ev.faultFree(cs) || !providerOverrides(ev, c.Method) {
			continue
		}
		if ev.tlsFailed(cs) {
			continue // the client rejected the run's CA: KIT-TLS-TRUST says so, not a deadline or an error
		}
		switch {
		case c.Outcome == simulate.OutcomeRaised && c.Error != nil && !c.CancelSent:
			msg := fmt.Sprintf("%s raised %s: %s in a step with no injected fault and consent granted; it must settle successfully%s", c.Method, c.Error.Type, truncateText(c.Error.Message, 200), where)
			add(cs, string(c.Method)+"|raised|"+c.Error.Type, msg, ev.errorLocation(cs))
		case cancelledCall(c) && !c.Is(simulate.CallPrepareTurn):
			msg := fmt.Sprintf("%s did not finish within its deadline with no fault injected and was cancelled%s", c.Method, where)
			add(cs, string(c.Method)+"|deadline", msg, ev.methodLocation(c.Method))
		}
	}
	return out
}

// waitingOn names the requests to a declared service that the call sent and that had no answer when its
// process ended ("; it was waiting on service identity: POST /token, never answered"), or "". A service that
// stalls (or answers a byte at a time) is the likeliest reason a callback blocked on a synchronous client
// never settled.
func waitingOn(cs callSite) string {
	var ws []string
	for _, r := range requestsOf(cs) {
		if r.Service == "" || r.Status != 0 || r.Dropped || r.Held {
			continue
		}
		if len(ws) == 3 {
			ws = append(ws, "and more")
			break
		}
		ws = append(ws, fmt.Sprintf("service %s: %s %s", r.Service, r.Method, r.Path))
	}
	if len(ws) == 0 {
		return ""
	}
	return "; it was waiting on " + strings.Join(ws, ", ") + ", which had not answered when the replica was killed (the service stalled; give the client a timeout below the callback's deadline)"
}

// malformed describes the type problems of a returned value the harness reported, or "".
func malformed(c *simulate.CallRecord) string {
	if c.Outcome != simulate.OutcomeReturned || c.Result == nil {
		return ""
	}
	problems := append([]string(nil), c.Result.Problems...)
	if d := c.Result.DeclarationError; d != nil && *d != "" {
		problems = append(problems, "its declaration cannot be stored: "+truncateText(*d, 240))
	}
	return strings.Join(problems, "; ")
}

// truncateText shortens a text to at most n bytes, marking the cut.
func truncateText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
