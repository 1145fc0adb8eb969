package conformance

import (
	"encoding/json"
	"net/http"

	"github.com/astrabox-dev/astrabox/internal/harness"
	"github.com/astrabox-dev/astrabox/internal/secrets"
	"github.com/astrabox-dev/astrabox/internal/services"
	"github.com/astrabox-dev/astrabox/internal/simulate"
)

// This file holds the one history builder of the decision tests (checks_*_test.go): synthetic histories
// and the evidence over them, without starting Python.

// histBuilder assembles a synthetic history for decision tests.
type histBuilder struct {
	h *simulate.History
	n int
}

func newHist(name string) *histBuilder {
	return &histBuilder{h: &simulate.History{Scenario: name}}
}

func (b *histBuilder) platform(msg string) {
	b.h.Events = append(b.h.Events, &simulate.Event{Kind: simulate.EventPlatform, Message: msg})
}

func (b *histBuilder) consent(principal, state string) {
	b.h.Events = append(b.h.Events, &simulate.Event{Kind: simulate.EventPlatform, Message: "consent of " + principal + " is now " + state,
		Consent: &simulate.ConsentState{Principal: principal, Consent: state}})
}

func (b *histBuilder) call(c *simulate.CallRecord) *simulate.CallRecord {
	b.n++
	if c.Key == "" {
		c.Key = c.Replica + "#" + string(rune('a'+b.n))
	}
	b.h.Events = append(b.h.Events, &simulate.Event{Kind: simulate.EventCall, Replica: c.Replica, Call: c})
	return c
}

func (b *histBuilder) request(r simulate.Request) {
	r = classified(r)
	r.Seq = int64(len(b.h.Requests) + 1)
	b.h.Requests = append(b.h.Requests, r)
}

// step adds a step event naming the call's method, then the call, as one step of its own (the shape the
// simulator records for a scenario step).
func (b *histBuilder) step(c *simulate.CallRecord) *simulate.CallRecord {
	i := len(b.h.Events) / 2
	b.h.Events = append(b.h.Events, &simulate.Event{Seq: 2 * i, Step: i + 1, Kind: simulate.EventStep, Message: string(c.Method)})
	b.h.Events = append(b.h.Events, &simulate.Event{Seq: 2*i + 1, Step: i + 1, Kind: simulate.EventCall, Call: c})
	return c
}

// fakeHistory builds a history from call records, one step each, with the given double requests.
func fakeHistory(calls []*simulate.CallRecord, reqs ...simulate.Request) *simulate.History {
	b := newHist("fake")
	for _, c := range calls {
		b.step(c)
	}
	for _, r := range reqs {
		b.h.Requests = append(b.h.Requests, classified(r))
	}
	return b.h
}

// classified classifies a hand-built request as the history does (a request of the double, or of a
// declared service with no further declarations), unless the test classified it already.
func classified(r simulate.Request) simulate.Request {
	if r.Class.Protocol != "" {
		return r
	}
	var spec *services.Spec
	if r.Service != "" {
		spec = &services.Spec{Name: r.Service}
	}
	simulate.ClassifyRequest(&r, spec, "", nil, r.Body)
	return r
}

// serviceRequest is a request of a declared service, classified with its headers and raw body as the
// history classifies it.
func serviceRequest(spec services.Spec, r simulate.Request, header http.Header, body string) simulate.Request {
	r.Service = spec.Name
	if json.Valid([]byte(body)) && body != "" {
		r.Body = json.RawMessage(body)
	}
	simulate.ClassifyRequest(&r, &spec, "", header, []byte(body))
	return r
}

// evidenceOf is the evidence of histories with no secrets, no material and a provider that defines nothing.
func evidenceOf(hs ...*simulate.History) *Evidence {
	return &Evidence{Histories: hs, Secrets: &secrets.Set{}, Material: map[string]string{}, Load: &harness.LoadInfo{}}
}
