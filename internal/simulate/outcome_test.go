package simulate

import (
	"testing"
	"time"
)

func TestClassifyOutcome(t *testing.T) {
	const budget = time.Second
	for _, c := range []struct {
		name string
		f    callFacts
		want Outcome
	}{
		{"returned", callFacts{Replied: true, OK: true, Timeout: budget}, OutcomeReturned},
		{"raised", callFacts{Replied: true, Timeout: budget}, OutcomeRaised},
		{"cancelled", callFacts{Replied: true, CancelSent: true, ErrorCancelled: true, Timeout: budget}, OutcomeCancelled},
		{"returned after the cancel", callFacts{Replied: true, OK: true, CancelSent: true, Duration: budget, Timeout: budget}, OutcomeOverran},
		{"raised something else after the cancel", callFacts{Replied: true, CancelSent: true, Duration: budget, Timeout: budget}, OutcomeOverran},
		{"reply crossed the cancel", callFacts{Replied: true, OK: true, CancelSent: true, Duration: budget / 2, Timeout: budget}, OutcomeReturned},
		{"within the send margin is not crossed", callFacts{Replied: true, OK: true, CancelSent: true, Duration: budget - 5*time.Millisecond, Timeout: budget}, OutcomeOverran},
		{"no measured duration is not crossed", callFacts{Replied: true, OK: true, CancelSent: true, Timeout: budget}, OutcomeOverran},
		{"raised, crossed", callFacts{Replied: true, CancelSent: true, Duration: budget / 2, Timeout: budget}, OutcomeRaised},
		{"cancel on request met it running", callFacts{Replied: true, OK: true, CancelSent: true, CancelReceived: true, OnRequest: true, Duration: budget / 2, Timeout: budget}, OutcomeOverran},
		{"cancel on request found it done", callFacts{Replied: true, OK: true, CancelSent: true, OnRequest: true, Duration: budget, Timeout: budget}, OutcomeReturned},
		{"process died", callFacts{ProcessFailed: true, Timeout: budget}, OutcomeDied},
		{"process died after a reply", callFacts{Replied: true, OK: true, ProcessFailed: true, Timeout: budget}, OutcomeDied},
		{"host loss", callFacts{HostLoss: true, ProcessFailed: true, Timeout: budget}, OutcomeHostLoss},
		{"host loss, yet it replied", callFacts{HostLoss: true, Replied: true, OK: true, Timeout: budget}, OutcomeReturned},
		{"host loss, replied, then the process failed", callFacts{HostLoss: true, Replied: true, OK: true, ProcessFailed: true, Timeout: budget}, OutcomeDied},
		{"nothing known", callFacts{Timeout: budget}, ""},
	} {
		if got := classifyOutcome(c.f); got != c.want {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
}
