package simulate

import (
	"testing"
)

func TestClassifyOutcome(t *testing.T) {
	for _, c := range []struct {
		name string
		f    callFacts
		want Outcome
	}{
		{"returned", callFacts{Replied: true, OK: true}, OutcomeReturned},
		{"raised", callFacts{Replied: true}, OutcomeRaised},
		{"cancelled", callFacts{Replied: true, CancelSent: true, ErrorCancelled: true}, OutcomeCancelled},
		{"returned after the cancel met it running", callFacts{Replied: true, OK: true, CancelSent: true, CancelReceived: true}, OutcomeOverran},
		{"raised something else after the cancel met it", callFacts{Replied: true, CancelSent: true, CancelReceived: true}, OutcomeOverran},
		{"held the loop through its deadline", callFacts{Replied: true, OK: true, CancelSent: true, HeldPastDeadline: true}, OutcomeOverran},
		{"raised after holding the loop", callFacts{Replied: true, CancelSent: true, HeldPastDeadline: true}, OutcomeOverran},
		// The cancel found it done with the loop free at the deadline: it came too late (a loaded machine
		// delays Go's timer or the pipe), however long the callback took by the clock.
		{"reply crossed the cancel", callFacts{Replied: true, OK: true, CancelSent: true}, OutcomeReturned},
		{"raised, crossed", callFacts{Replied: true, CancelSent: true}, OutcomeRaised},
		{"cancel on request met it running", callFacts{Replied: true, OK: true, CancelSent: true, CancelReceived: true, OnRequest: true}, OutcomeOverran},
		{"cancel on request found it done", callFacts{Replied: true, OK: true, CancelSent: true, OnRequest: true}, OutcomeReturned},
		{"process died", callFacts{ProcessFailed: true}, OutcomeDied},
		{"process died after a reply", callFacts{Replied: true, OK: true, ProcessFailed: true}, OutcomeDied},
		{"host loss", callFacts{HostLoss: true, ProcessFailed: true}, OutcomeHostLoss},
		{"host loss, yet it replied", callFacts{HostLoss: true, Replied: true, OK: true}, OutcomeReturned},
		{"host loss, replied, then the process failed", callFacts{HostLoss: true, Replied: true, OK: true, ProcessFailed: true}, OutcomeDied},
		{"nothing known", callFacts{}, ""},
	} {
		if got := classifyOutcome(c.f); got != c.want {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
}
