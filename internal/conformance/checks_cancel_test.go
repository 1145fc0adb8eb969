package conformance

import (
	"strings"
	"testing"

	"github.com/astrabox-dev/astrabox/internal/harness"
	"github.com/astrabox-dev/astrabox/internal/simulate"
)

// cancelledWith is a history of one cancelled prepare_turn whose one write landed before the platform took
// its reply (ApplyOrder 1, ApplyMark 1), issued by is; the callback waited for the units in waited.
func cancelledWith(is *harness.Issuer, waited ...int64) *simulate.History {
	b := newHist("x")
	c := b.call(&simulate.CallRecord{Replica: "r1", Method: "prepare_turn", Outcome: simulate.OutcomeCancelled, CancelSent: true, ApplyMark: 1, Waited: waited})
	b.request(simulate.Request{Replica: "r1", Call: c.Key, Method: "PUT", Path: "/v1/records/turn-starts/s1/c1", Status: 200, Applied: true, ApplyOrder: 1, Issuer: is})
	return b.h
}

// TestCancelCleanJudgesWhoIssuedTheWrite proves GEN-CANCEL-CLEAN decides from which unit of the cancelled
// callback's work issued a write and whether the callback waited for it, not from when the write landed: every
// write here landed before the reply, which the landing-order rule alone (lateWrites) never fails.
func TestCancelCleanJudgesWhoIssuedTheWrite(t *testing.T) {
	cases := []struct {
		name   string
		is     *harness.Issuer
		waited []int64
		fails  bool
		says   string
	}{
		{"own task", &harness.Issuer{Kind: harness.WorkOwn}, nil, false, ""},
		{"loop callback", &harness.Issuer{Kind: harness.WorkLoop}, nil, false, ""},
		{"joined thread", &harness.Issuer{Kind: harness.WorkThread, Unit: 2}, []int64{1, 2}, false, ""},
		{"awaited job", &harness.Issuer{Kind: harness.WorkJob, Unit: 1}, []int64{1}, false, ""},
		{"no tag", nil, nil, false, ""},
		{"abandoned job", &harness.Issuer{Kind: harness.WorkJob, Unit: 3}, []int64{1, 2}, true, "executor job 3 of prepare_turn, which prepare_turn never waited for"},
		{"abandoned thread", &harness.Issuer{Kind: harness.WorkThread, Unit: 1}, nil, true, "thread 1 of prepare_turn"},
		{"abandoned timer", &harness.Issuer{Kind: harness.WorkTimer, Unit: 1}, nil, true, "timer 1 of prepare_turn"},
		{"after the end", &harness.Issuer{Kind: harness.WorkTask, Unit: 1, AfterEnd: true}, []int64{1}, true, "after prepare_turn had ended"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := evidenceOf(cancelledWith(c.is, c.waited...))
			if late := lateWrites(ev.calls()[0]); len(late) != 0 {
				t.Fatalf("the write landed before the reply, yet the landing-order rule calls it late: %+v", late)
			}
			fs := decideGenCancelClean(ev)
			if (len(fs) > 0) != c.fails {
				t.Fatalf("findings = %+v, want failing %v", fs, c.fails)
			}
			if c.fails && (!strings.Contains(fs[0].Message, c.says) || !strings.Contains(fs[0].Message, "PUT /v1/records/turn-starts/s1/c1")) {
				t.Errorf("message %q should name the write and say %q", fs[0].Message, c.says)
			}
		})
	}
}

// TestIssuedAfterEndIsLateWhereverItLands proves a returned callback's write its work issued after the
// callback's code ended is GEN-NO-DISPATCH's (and a returned synchronize's, SYNC-QUIESCENT's) even when it
// landed before the platform took the reply, and that a write issued before the end is not.
func TestIssuedAfterEndIsLateWhereverItLands(t *testing.T) {
	for _, after := range []bool{false, true} {
		b := newHist("x")
		c := b.call(&simulate.CallRecord{Replica: "r1", Method: "prepare_turn", Outcome: simulate.OutcomeReturned, ApplyMark: 1})
		b.request(simulate.Request{Replica: "r1", Call: c.Key, Method: "PUT", Path: "/v1/records/audit/s1/t1", Status: 200, Applied: true, ApplyOrder: 1,
			Issuer: &harness.Issuer{Kind: harness.WorkJob, Unit: 1, AfterEnd: after}})
		s := b.call(&simulate.CallRecord{Replica: "r1", Method: "synchronize", Outcome: simulate.OutcomeReturned, ApplyMark: 2})
		b.request(simulate.Request{Replica: "r1", Call: s.Key, Method: "PUT", Path: "/v1/records/agents/agent-1", Status: 200, Applied: true, ApplyOrder: 2,
			Issuer: &harness.Issuer{Kind: harness.WorkThread, Unit: 1, AfterEnd: after}})
		ev := evidenceOf(b.h)
		fs := decideGenNoDispatch(ev)
		if (len(fs) == 1) != after || (after && !strings.Contains(fs[0].Message, "/v1/records/audit/s1/t1")) {
			t.Errorf("issued after the end %v: GEN-NO-DISPATCH findings = %+v", after, fs)
		}
		if late := syncLateWrites(ev.calls(simulate.CallSynchronize)[0]); (len(late) == 1) != after {
			t.Errorf("issued after the end %v: synchronize's late writes = %+v", after, late)
		}
	}
}
