package conformance

import (
	"fmt"
	"slices"
	"strings"

	"github.com/astrabox-dev/astrabox/internal/harness"
	"github.com/astrabox-dev/astrabox/internal/report"
	"github.com/astrabox-dev/astrabox/internal/simulate"
)

// The typed facts the checks of several checks_<area>.go files read from the histories. Only shared
// helpers live here: a helper that the checks of one area use lives in that area's checks_<area>.go.

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
