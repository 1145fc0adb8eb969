package conformance

import (
	"fmt"
	"slices"
	"strings"

	"github.com/astrabox-dev/astrabox/internal/harness"
	"github.com/astrabox-dev/astrabox/internal/report"
	"github.com/astrabox-dev/astrabox/internal/simulate"
)

// callSite is one recorded callback with the history it belongs to.
type callSite struct {
	h *simulate.History
	c *simulate.CallRecord
	e *simulate.Event
}

// calls returns every recorded call of the given methods (all methods when none given), in history order.
func (ev *Evidence) calls(methods ...simulate.Callback) []callSite {
	var out []callSite
	for _, h := range ev.Histories {
		for _, e := range h.Events {
			if e.Call == nil {
				continue
			}
			if len(methods) > 0 && !slices.Contains(methods, e.Call.Method) {
				continue
			}
			out = append(out, callSite{h: h, c: e.Call, e: e})
		}
	}
	return out
}

// returned reports whether a call returned normally.
func (cs callSite) returned() bool {
	return cs.c.Outcome == simulate.OutcomeReturned && cs.c.Result != nil
}

// materials returns the RuntimeMaterials a call returned, or nil.
func (cs callSite) materials() *harness.Result {
	if cs.returned() && simulate.KindMaterials.Of(cs.c.Result) {
		return cs.c.Result
	}
	return nil
}

// steps lists the scenario steps up to and including the call's step, in order (reports number them).
func steps(h *simulate.History, upTo int) []string {
	var out []string
	for _, e := range h.Events {
		if e.Kind == simulate.EventStep && e.Step <= upTo {
			out = append(out, e.Message)
		}
	}
	return out
}

// evidence builds an evidence entry for a call.
func (ev *Evidence) evidence(cs callSite, text string, loc *report.Location) report.Evidence {
	return report.Evidence{
		Text:     text,
		Scenario: cs.h.Scenario,
		Steps:    steps(cs.h, cs.e.Step),
		Replica:  cs.c.Replica,
		Callback: string(cs.c.Method),
		CallID:   callID(cs.c.Key),
		Location: loc,
	}
}

// methodLocation is where the provider defines a callback (its override), or nil.
func (ev *Evidence) methodLocation(method simulate.Callback) *report.Location {
	if ev.Load == nil {
		return nil
	}
	if m, ok := ev.Load.Methods[string(method)]; ok && m.File != "" {
		return &report.Location{Path: m.File, Line: m.Line}
	}
	return nil
}

// classLocation is where the provider class is defined.
func (ev *Evidence) classLocation() *report.Location {
	if ev.Load == nil || ev.Load.File == "" {
		return nil
	}
	return &report.Location{Path: ev.Load.File, Line: ev.Load.Line}
}

// errorLocation is the provider's innermost frame of an exception, else the method definition.
func (ev *Evidence) errorLocation(cs callSite) *report.Location {
	if cs.c.Error != nil && len(cs.c.Error.Frames) > 0 {
		f := cs.c.Error.Frames[len(cs.c.Error.Frames)-1]
		return &report.Location{Path: f.File, Line: f.Line}
	}
	return ev.methodLocation(cs.c.Method)
}

// at builds a location from a file and line, or nil.
func at(file string, line int) *report.Location {
	if file == "" {
		return nil
	}
	return &report.Location{Path: file, Line: line}
}

// allObservations returns a call's observations plus the background observations of work it left behind:
// those the platform recorded as that call's (Origin) wherever they are in the history, and those without
// an origin the same replica reported right after it.
func (ev *Evidence) allObservations(cs callSite) harness.Observations {
	obs := cs.c.Observations
	found, adjacent := false, true
	for _, e := range cs.h.Events {
		if e == cs.e {
			found = true
			continue
		}
		if !found {
			continue
		}
		if e.Kind == simulate.EventCall {
			adjacent = false
		}
		if e.Kind != simulate.EventBackground || e.Replica != cs.c.Replica || e.Background == nil {
			continue
		}
		if e.Origin == cs.c.Key || (e.Origin == "" && adjacent) {
			obs.Merge(*e.Background)
		}
	}
	return obs
}

// requestsOf returns the deployment double requests attributed to a call.
func requestsOf(cs callSite) []simulate.Request { return cs.h.RequestsOf(cs.c.Key) }

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

// describeRequest is a one-line description of a double request.
func describeRequest(r simulate.Request) string {
	s := fmt.Sprintf("%s %s", r.Method, r.Path)
	if r.Class.Operation != "" {
		s += " " + r.Class.Operation
	}
	if r.Operation != "" {
		s += " (operation " + r.Operation + ")"
	}
	switch {
	case r.Fenced:
		s += " -> 409 fenced"
	case r.Dropped:
		s += " -> applied, connection dropped"
	case r.Status != 0:
		s += fmt.Sprintf(" -> %d", r.Status)
	}
	return s
}

// keyedBefore reports whether a write carries an idempotency key or condition that an earlier write of the
// same service carried (recorded in seen, as Class.KeyID): it is the same write again and counts once. A
// write with a key is added to seen.
func keyedBefore(seen map[string]bool, r simulate.Request) bool {
	id := r.Class.KeyID(r.Service)
	if id == "" {
		return false
	}
	before := seen[id]
	seen[id] = true
	return before
}

// describeKey names a write's key for a message ("" when it has none).
func describeKey(r simulate.Request) string {
	if k := r.Class.Key; k != nil && k.Value != "" {
		return fmt.Sprintf(" (%s %s)", k.Source, k.Value)
	}
	return ""
}

// callID is the harness call id part of a call key ("r2#5" -> "5"), or the key when it has no replica part.
func callID(key string) string {
	if _, id, ok := strings.Cut(key, "#"); ok {
		return id
	}
	return key
}
