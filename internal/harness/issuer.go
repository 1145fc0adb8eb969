package harness

import (
	"strconv"
	"strings"
)

// WorkHeader is the header the harness adds to every request the provider sends to the deployment double
// with http.client (urllib, requests and urllib3 included), next to the call header: the unit of the call's
// work that issued the request, "<kind>:<unit>", with ";after-end" when the callback's own code had already
// ended.
const WorkHeader = "X-Astrabox-Work"

// WorkKind names what kind of unit of a call's work issued a request.
type WorkKind string

// Unit kinds. WorkOwn is the callback's own task (unit 0); WorkLoop a loop callback (a timer handle) run while
// the callback was suspended, also unit 0; the others are units the callback's code started.
const (
	WorkOwn    WorkKind = "own"
	WorkLoop   WorkKind = "loop"
	WorkTask   WorkKind = "task"
	WorkThread WorkKind = "thread"
	WorkTimer  WorkKind = "timer"
	WorkJob    WorkKind = "job"
)

// Issuer is the unit of a call's work that issued a request or opened a connection, as the harness saw it
// when it happened (its own order of events, never when the request landed).
type Issuer struct {
	// Kind is the unit's kind; Unit its number within the call (0: the callback's own task, 1, 2, ... the
	// threads, executor jobs and tasks the call started, in the order it started them).
	Kind WorkKind `json:"kind"`
	Unit int64    `json:"unit"`
	// AfterEnd is true when the callback's own code had already ended (returned, raised or was cancelled).
	AfterEnd bool `json:"after_end,omitempty"`
}

// Started reports whether the issuer is a unit the callback's code started (not its own task or loop).
func (i Issuer) Started() bool { return i.Unit != 0 }

// ParseIssuer reads an X-Astrabox-Work header value; ok is false when it is not one the harness writes.
func ParseIssuer(v string) (Issuer, bool) {
	tag, flags, _ := strings.Cut(strings.TrimSpace(v), ";")
	kind, num, found := strings.Cut(tag, ":")
	if !found {
		return Issuer{}, false
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 {
		return Issuer{}, false
	}
	switch k := WorkKind(kind); k {
	case WorkOwn, WorkLoop, WorkTask, WorkThread, WorkTimer, WorkJob:
		return Issuer{Kind: k, Unit: n, AfterEnd: flags == "after-end"}, true
	}
	return Issuer{}, false
}
