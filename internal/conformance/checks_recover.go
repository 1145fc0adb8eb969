package conformance

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/astrabox-dev/astrabox/internal/report"
	"github.com/astrabox-dev/astrabox/internal/simulate"
)

// This file holds the checks of recover (RECOVER-*).

// judgesRecover lists the callback the recover checks judge.
var judgesRecover = []simulate.Callback{simulate.CallRecover}

func init() {
	register(
		&Check{
			ID: "RECOVER-TRUTH", Title: "recover returns True only once the operation can never write", Area: AreaSync, Severity: report.SeverityError,
			Clauses: []string{"RECOVER-TRUTH"},
			Needs:   "a recover call for an unresolved operation that returned an answer", Exercise: exRecover, Judges: judgesRecover,
			Rationale: "True tells the platform that the unresolved operation is over for good, so it may start a new one. If a delayed request of that operation can still land, it overwrites the newer operation's state. An absent remote result or an expired lease proves nothing: the request may simply not have arrived yet. Only a durable fence (or an equivalent guarantee) does.",
			Hint:      "Fence operation.operation_id at the deployment and return True only when the fence is confirmed.",
			Wrong:     "version, value = await read(path)\nreturn value is None or value[\"written_by\"] != operation.operation_id",
			Right:     "answer = await client.post(\"/v1/fences\", {\"agent_id\": op.agent_id, \"operation_id\": op.operation_id})\nreturn answer.status == 200 and answer.body[\"fenced\"] == op.operation_id",
			Decide:    decideRecoverTruth,
		},
		&Check{
			ID: "RECOVER-IDEMPOTENT", Title: "recover is idempotent", Area: AreaSync, Severity: report.SeverityError,
			Clauses: []string{"RECOVER-IDEMPOTENT"},
			Needs:   "two recover calls for one operation", Exercise: exRecoverTwice, Judges: judgesRecover,
			Rationale: "The platform may ask recover about the same operation several times, from different replicas, for example after losing the first answer. Once an operation is known to be quiescent it stays quiescent; answering False later contradicts the earlier True and leaves the operation stuck until its deadline.",
			Hint:      "Make recover's answer depend only on durable facts (the fence), so that asking again gives the same answer.",
			Wrong:     "answer = await client.put(\"/v1/records/recoveries/\" + op.operation_id, {}, if_match=0)\nreturn answer.status == 200  # False the second time",
			Right:     "answer = await client.post(\"/v1/fences\", {\"agent_id\": op.agent_id, \"operation_id\": op.operation_id})\nreturn answer.status == 200",
			Decide:    decideRecoverIdempotent,
		},
		&Check{
			ID: "RECOVER-NO-FENCE-NEWER", Title: "recover fences only its own operation", Area: AreaSync, Severity: report.SeverityError,
			Clauses: []string{"RECOVER-NO-FENCE-NEWER"},
			Needs:   "a recover call for an unresolved operation that returned an answer", Exercise: exRecover, Judges: judgesRecover,
			Rationale: "recover is asked about one operation. Fencing anything else (the operation that last wrote the record, the newest one this process saw) refuses the writes of a newer, healthy operation, which then fails or stays unresolved although nothing was wrong with it.",
			Hint:      "Post a fence naming operation.operation_id and nothing else.",
			Wrong:     "for op_id in {operation.operation_id, record[\"written_by\"]}:\n    await client.post(\"/v1/fences\", {\"agent_id\": a, \"operation_id\": op_id})",
			Right:     "await client.post(\"/v1/fences\", {\"agent_id\": operation.agent_id, \"operation_id\": operation.operation_id})",
			Decide:    decideRecoverNoFenceNewer,
		},
	)
}

// recovered reports whether a recover call answered True.
func recovered(cs callSite) bool {
	return cs.returned() && simulate.KindBool.Of(cs.c.Result) && cs.c.Result.Value
}

// answeredFalse reports whether a recover call returned False.
func answeredFalse(cs callSite) bool {
	return cs.returned() && simulate.KindBool.Of(cs.c.Result) && !cs.c.Result.Value
}

// synchronizeOf finds the synchronize call that ran an operation (by label) in the recover call's history.
func synchronizeOf(rc callSite) (callSite, bool) {
	for _, e := range rc.h.Events {
		if e.Call != nil && e.Call.Is(simulate.CallSynchronize) && e.Call.Ctx.Operation == rc.c.Ctx.Operation {
			return callSite{h: rc.h, c: e.Call, e: e}, true
		}
	}
	return callSite{}, false
}

// exRecover needs a recover call for an unresolved operation.
var exRecover = needCalls(need{calls: judgesRecover, label: "returned an answer",
	met:   func(_ *Evidence, cs callSite) bool { return cs.c.Returned(simulate.KindBool) },
	reach: "a synchronize that ends unresolved (timeout, host loss) followed by a recover step reaches it"})

func decideRecoverTruth(ev *Evidence) []Finding {
	var out []Finding
	done := map[string]bool{}
	for _, rc := range ev.calls(simulate.CallRecover) {
		if !recovered(rc) {
			continue
		}
		sc, ok := synchronizeOf(rc)
		if !ok {
			continue
		}
		tag := rc.h.Scenario + "/" + rc.c.Ctx.Operation
		if done[tag] {
			continue
		}
		var late []string
		for _, r := range writesOf(sc) {
			if r.Applied && r.ApplyOrder > rc.c.ApplyMark {
				late = append(late, describeRequest(r))
			}
		}
		if len(late) == 0 {
			continue
		}
		done[tag] = true
		loc := ev.methodLocation(simulate.CallRecover)
		msg := fmt.Sprintf("recover(%s) returned True, yet %d write(s) of that operation were applied afterwards: %s", rc.c.Ctx.Operation, len(late), strings.Join(late, "; "))
		out = append(out, Finding{Message: msg, Location: loc, Evidence: []report.Evidence{ev.evidence(sc, "synchronize of the operation did not complete", ev.methodLocation(simulate.CallSynchronize)), ev.evidence(rc, msg, loc)}})
	}
	return out
}

// exRecoverTwice needs two recover calls for one operation.
func exRecoverTwice(ev *Evidence) Exercise {
	t := newTally(callNoun(simulate.CallRecover))
	met := 0
	for _, h := range ev.Histories {
		seen := map[string]int{}
		for _, cs := range ev.callsIn(h, simulate.CallRecover) {
			id := operationID(cs.c)
			seen[id]++
			label := ""
			if id != "" && seen[id] == 2 {
				met++
				label = "operations recovered twice"
			}
			t.add(cs, label)
		}
	}
	return need{reach: "two recover steps for the same unresolved operation reach it"}.result(t, met)
}

func decideRecoverIdempotent(ev *Evidence) []Finding {
	var out []Finding
	for _, h := range ev.Histories {
		first := map[string]callSite{}
		reported := map[string]bool{}
		for _, rc := range ev.calls(simulate.CallRecover) {
			if rc.h != h {
				continue
			}
			op := rc.c.Ctx.Operation
			if recovered(rc) {
				if _, ok := first[op]; !ok {
					first[op] = rc
				}
				continue
			}
			prev, ok := first[op]
			if !ok || reported[op] {
				continue
			}
			loc := ev.methodLocation(simulate.CallRecover)
			switch {
			case answeredFalse(rc):
				reported[op] = true
				msg := fmt.Sprintf("recover(%s) answered True on replica %s (%s), then False on replica %s (%s)", op, prev.c.Replica, prev.c.Key, rc.c.Replica, rc.c.Key)
				out = append(out, Finding{Message: msg, Location: loc, Evidence: []report.Evidence{ev.evidence(prev, "answered True", loc), ev.evidence(rc, msg, loc)}})
			case rc.c.Outcome == simulate.OutcomeRaised:
				reported[op] = true
				eloc := ev.errorLocation(rc)
				typ := "an exception"
				if rc.c.Error != nil {
					typ = rc.c.Error.Type
				}
				msg := fmt.Sprintf("recover(%s) answered True (%s), then raised %s when asked again (%s)", op, prev.c.Key, typ, rc.c.Key)
				out = append(out, Finding{Warning: true, Message: msg, Location: eloc, Evidence: []report.Evidence{ev.evidence(prev, "answered True", loc), ev.evidence(rc, msg, eloc)}})
			}
		}
	}
	return out
}

// fenceTarget returns the operation id a fence request names, or "".
func fenceTarget(r simulate.Request) string {
	if r.Method != "POST" || strings.TrimSuffix(r.Path, "/") != "/v1/fences" {
		return ""
	}
	body := r.RawBody()
	if len(body) == 0 {
		body = r.Body
	}
	var v struct {
		OperationID any `json:"operation_id"`
	}
	if json.Unmarshal(body, &v) != nil || v.OperationID == nil {
		return ""
	}
	return fmt.Sprint(v.OperationID)
}

func decideRecoverNoFenceNewer(ev *Evidence) []Finding {
	var out []Finding
	for _, h := range ev.Histories {
		labels := map[string]string{} // operation id -> label
		asked := map[string]bool{}    // operation ids recover was called for
		for _, c := range h.Calls() {
			if id := operationID(c); id != "" {
				if c.Is(simulate.CallSynchronize) {
					labels[id] = c.Ctx.Operation
				}
				if c.Is(simulate.CallRecover) {
					asked[id] = true
				}
			}
		}
		name := func(id string) string {
			if l, ok := labels[id]; ok {
				return l + " (" + id + ")"
			}
			return id
		}
		// Fences posted while recover ran must name the operation it was asked about.
		for _, rc := range ev.calls(simulate.CallRecover) {
			if rc.h != h {
				continue
			}
			own := operationID(rc.c)
			var others []string
			for _, r := range h.RequestsOf(rc.c.Key) {
				if t := fenceTarget(r); t != "" && t != own {
					others = append(others, name(t))
				}
			}
			if len(others) > 0 {
				loc := ev.methodLocation(simulate.CallRecover)
				msg := fmt.Sprintf("recover(%s) posted fence(s) for other operation(s): %s", rc.c.Ctx.Operation, strings.Join(others, ", "))
				out = append(out, Finding{Message: msg, Location: loc, Evidence: []report.Evidence{ev.evidence(rc, msg, loc)}})
			}
		}
		// A write refused as fenced must belong to an operation recover was asked about.
		reported := map[string]bool{}
		for _, r := range h.Requests {
			if !r.Fenced || r.Operation == "" || asked[r.Operation] || reported[r.Operation] {
				continue
			}
			reported[r.Operation] = true
			msg := fmt.Sprintf("a write of operation %s, which no recover was asked about, was refused as fenced: %s", name(r.Operation), describeRequest(r))
			f := Finding{Message: msg, Location: ev.methodLocation(simulate.CallRecover)}
			if cs, ok := callOf(h, r.Call); ok {
				f.Evidence = []report.Evidence{ev.evidence(cs, msg, ev.methodLocation(cs.c.Method))}
			}
			out = append(out, f)
		}
	}
	return out
}

// ---------------------------------------------------------------------------------------------------------
// LEAK-INVENTORY
