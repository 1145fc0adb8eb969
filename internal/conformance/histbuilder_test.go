package conformance

import (
	"github.com/astrabox-dev/astrabox/internal/harness"
	"github.com/astrabox-dev/astrabox/internal/secrets"
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
	b.h.Requests = reqs
	return b.h
}

// evidenceOf is the evidence of histories with no secrets, no material and a provider that defines nothing.
func evidenceOf(hs ...*simulate.History) *Evidence {
	return &Evidence{Histories: hs, Secrets: &secrets.Set{}, Material: map[string]string{}, Load: &harness.LoadInfo{}}
}
