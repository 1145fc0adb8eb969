package conformance

import (
	"strings"
	"testing"

	"github.com/astrabox-dev/astrabox/internal/harness"
	"github.com/astrabox-dev/astrabox/internal/simulate"
)

// lateWriteHistory has one call of the given outcome whose write the double applied after the call settled.
func lateWriteHistory(outcome simulate.Outcome, cancelSent bool) *simulate.History {
	b := newHist("x")
	c := b.call(&simulate.CallRecord{Replica: "r1", Method: "prepare_turn", Outcome: outcome, CancelSent: cancelSent, ApplyMark: 1})
	b.request(simulate.Request{Replica: "r1", Call: c.Key, Method: "POST", Path: "/v1/credentials", Status: 201, Applied: true, ApplyOrder: 1})
	b.request(simulate.Request{Replica: "r1", Call: c.Key, Method: "PUT", Path: "/v1/records/turns/s1/c1", Status: 200, Applied: true, ApplyOrder: 2})
	return b.h
}

func TestLateWritesSplitBetweenCancelAndBackground(t *testing.T) {
	cases := []struct {
		outcome          simulate.Outcome
		cancel           bool
		cancelFindings   int
		dispatchFindings int
	}{
		{simulate.OutcomeCancelled, true, 1, 0},
		{simulate.OutcomeOverran, true, 1, 0},
		{simulate.OutcomeReturned, false, 0, 1},
		{simulate.OutcomeRaised, false, 0, 1},
		{simulate.OutcomeHostLoss, false, 0, 0},
	}
	for _, c := range cases {
		ev := evidenceOf(lateWriteHistory(c.outcome, c.cancel))
		if n := len(decideGenCancelClean(ev)); n != c.cancelFindings {
			t.Errorf("%s: GEN-CANCEL-CLEAN findings = %d, want %d", c.outcome, n, c.cancelFindings)
		}
		fs := decideGenNoDispatch(ev)
		if len(fs) != c.dispatchFindings {
			t.Errorf("%s: GEN-NO-DISPATCH findings = %+v, want %d", c.outcome, fs, c.dispatchFindings)
		}
	}
	fs := decideGenCancelClean(evidenceOf(lateWriteHistory(simulate.OutcomeCancelled, true)))
	if !strings.Contains(fs[0].Message, "PUT /v1/records/turns/s1/c1") || strings.Contains(fs[0].Message, "POST /v1/credentials") {
		t.Fatalf("the message should name only the write that landed late: %q", fs[0].Message)
	}
}

func TestGenNoDispatchForbiddenAndBackground(t *testing.T) {
	b := newHist("x")
	c := b.call(&simulate.CallRecord{Replica: "r1", Method: "perform_user_action", Outcome: simulate.OutcomeReturned, ApplyMark: 1,
		Observations: harness.Observations{Leftovers: harness.Leftovers{Threads: []harness.LeftoverThread{{Name: "poller", File: "p.py", Line: 9}}}}})
	b.request(simulate.Request{Replica: "r1", Call: c.Key, Callback: "perform_user_action", Method: "POST", Path: "/v1/consents/bob/flows", Status: 201, Applied: true, ApplyOrder: 1, Forbidden: true})
	b.request(simulate.Request{Replica: "r1", Method: "PUT", Path: "/v1/records/x", Status: 200, Applied: true, ApplyOrder: 2})
	b.request(simulate.Request{Replica: "r1", Method: "GET", Path: "/v1/records/x", Status: 200})
	fs := decideGenNoDispatch(evidenceOf(b.h))
	if len(fs) != 2 {
		t.Fatalf("findings = %+v", fs)
	}
	if !strings.Contains(fs[0].Message, "/v1/consents/bob/flows") {
		t.Errorf("forbidden finding = %q", fs[0].Message)
	}
	if !strings.Contains(fs[1].Message, "thread poller") || fs[1].Location == nil || fs[1].Location.Path != "p.py" {
		t.Errorf("background finding should blame the leftover thread: %+v", fs[1])
	}
}

// TestGenSettlesEveryProcessDeath proves every process death fails GEN-SETTLES, the harness-protocol and
// closed-channel kinds included (a replica dying of a protocol error used to pass), while a host loss the
// platform injected does not; each kind is reported once per callback.
func TestGenSettlesEveryProcessDeath(t *testing.T) {
	b := newHist("x")
	b.call(&simulate.CallRecord{Replica: "r1", Method: "prepare_session", Outcome: simulate.OutcomeDied, ProcessKind: string(harness.KindHung)})
	b.call(&simulate.CallRecord{Replica: "r1", Method: "prepare_turn", Outcome: simulate.OutcomeDied, ProcessKind: string(harness.KindClosed)})
	b.call(&simulate.CallRecord{Replica: "r2", Method: "synchronize", Outcome: simulate.OutcomeHostLoss, Fault: simulate.FaultHostLoss})
	b.call(&simulate.CallRecord{Replica: "r2", Method: "prepare_session", Outcome: simulate.OutcomeDied, ProcessKind: string(harness.KindHung)})
	b.call(&simulate.CallRecord{Replica: "r3", Method: "read_user_actions", Outcome: simulate.OutcomeDied, ProcessKind: string(harness.KindProtocol), ProcessError: "frame too large"})
	fs := decideGenSettles(evidenceOf(b.h))
	if len(fs) != 3 || !strings.HasPrefix(fs[0].Message, "prepare_session never settled") ||
		!strings.Contains(fs[1].Message, "already closed") || !strings.Contains(fs[2].Message, "harness protocol") || !strings.Contains(fs[2].Message, "frame too large") {
		t.Fatalf("findings = %+v", fs)
	}
}

// TestGenSettlesFaultFreeRaise proves a raise in a fault-free step with consent granted fails GEN-SETTLES at
// the provider's frame, while the same raise under an injected fault or a pending consent does not.
func TestGenSettlesFaultFreeRaise(t *testing.T) {
	raise := func(fault string, principal string) *simulate.History {
		b := newHist("x")
		b.h.Principals = []simulate.ConsentState{{Principal: "alice", Consent: simulate.ConsentGranted}, {Principal: "dave", Consent: simulate.ConsentPending}}
		b.h.Events = append(b.h.Events, &simulate.Event{Kind: simulate.EventStep, Step: 1, Message: "claim"})
		c := b.call(&simulate.CallRecord{Replica: "r1", Method: "prepare_session", Outcome: simulate.OutcomeRaised, Fault: fault,
			Ctx:   simulate.CallContext{Session: "s1", Principal: principal},
			Error: &harness.PyError{Type: "RuntimeError", Message: "boom", Frames: []harness.Frame{{File: "/p/provider.py", Line: 42}}}})
		b.h.Events[len(b.h.Events)-1].Step = 1
		_ = c
		return b.h
	}
	fs := decideGenSettles(evidenceOf(raise("", "alice")))
	if len(fs) != 1 || !strings.Contains(fs[0].Message, "raised RuntimeError: boom") || fs[0].Location == nil || fs[0].Location.Line != 42 {
		t.Fatalf("findings = %+v", fs)
	}
	if fs := decideGenSettles(evidenceOf(raise(simulate.FaultTimeout, "alice"))); len(fs) != 0 {
		t.Fatalf("a raise under an injected fault failed: %+v", fs)
	}
	if fs := decideGenSettles(evidenceOf(raise("", "dave"))); len(fs) != 0 {
		t.Fatalf("a raise while consent was pending failed: %+v", fs)
	}
}

// TestGenSettlesMalformedValue proves a returned value with type problems, or a declaration the platform
// cannot store, fails GEN-SETTLES (the harness reports them; they used to be dropped).
func TestGenSettlesMalformedValue(t *testing.T) {
	b := newHist("x")
	derr := "declaration.a is nested more than 64 levels deep (a cycle?)"
	b.call(&simulate.CallRecord{Replica: "r1", Method: "prepare_session", Outcome: simulate.OutcomeReturned, Fault: simulate.FaultTimeout,
		Result: &harness.Result{Type: simulate.KindMaterials, Problems: []string{"files[0].content is a str, not bytes"}}})
	b.call(&simulate.CallRecord{Replica: "r1", Method: "plan", Outcome: simulate.OutcomeReturned,
		Result: &harness.Result{Type: simulate.KindPlan, DeclarationError: &derr}})
	fs := decideGenSettles(evidenceOf(b.h))
	if len(fs) != 2 || !strings.Contains(fs[0].Message, "not bytes") || !strings.Contains(fs[1].Message, "cycle") {
		t.Fatalf("findings = %+v", fs)
	}
}

// TestGenSettlesNamesTheMemoryBound: a replica killed at its memory bound is reported as exceeding it, with
// the resident size found and the bound (from the call's typed facts), never as a blocked event loop.
func TestGenSettlesNamesTheMemoryBound(t *testing.T) {
	b := newHist("x")
	b.call(&simulate.CallRecord{Replica: "r1", Method: "prepare_session", Outcome: simulate.OutcomeDied, ProcessKind: string(harness.KindMemoryLimit),
		MemoryRSS: 1100 << 20, MemoryLimit: 1 << 30})
	b.call(&simulate.CallRecord{Replica: "r2", Method: "prepare_turn", Outcome: simulate.OutcomeDied, ProcessKind: string(harness.KindMemoryLimit),
		MemoryRSS: 1030 << 20, MemoryLimit: 1 << 30})
	fs := decideGenSettles(evidenceOf(b.h))
	if len(fs) != 2 {
		t.Fatalf("findings = %+v", fs)
	}
	for i, rss := range []string{"1100 MiB", "1030 MiB"} {
		m := fs[i].Message
		if !strings.Contains(m, "exceeded the memory bound") || !strings.Contains(m, rss) || !strings.Contains(m, "bound of 1024 MiB") || strings.Contains(m, "event loop") {
			t.Errorf("finding %d: %q", i, m)
		}
	}
}
