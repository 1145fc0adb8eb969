package explore

import (
	"slices"
	"testing"

	"github.com/astrabox-dev/astrabox/internal/harness"
	"github.com/astrabox-dev/astrabox/internal/simulate"
)

// hist builds a history event by event.
type hist struct {
	h    *simulate.History
	step int
	n    int
}

func newHist(principals ...simulate.ConsentState) *hist {
	return &hist{h: &simulate.History{Scenario: "s", Principals: principals}}
}

// call adds a callback as step's only call and returns its record.
func (b *hist) call(m simulate.Callback, replica string, ctx simulate.CallContext) *simulate.CallRecord {
	b.step++
	b.n++
	c := &simulate.CallRecord{Key: replica + "#" + string(rune('0'+b.n)), Method: m, Replica: replica, Ctx: ctx, Outcome: simulate.OutcomeReturned}
	b.h.Events = append(b.h.Events, &simulate.Event{Step: b.step, Kind: simulate.EventCall, Replica: replica, Call: c})
	return c
}

func (b *hist) session(m simulate.Callback, replica, session, principal string) *simulate.CallRecord {
	return b.call(m, replica, simulate.CallContext{Session: session, Principal: principal})
}

func (b *hist) consent(p, state string) {
	b.step++
	b.h.Events = append(b.h.Events, &simulate.Event{Step: b.step, Kind: simulate.EventPlatform, Op: simulate.OpSetConsent, Consent: &simulate.ConsentState{Principal: p, Consent: state}})
}

func (b *hist) release() {
	b.step++
	b.h.Events = append(b.h.Events, &simulate.Event{Step: b.step, Kind: simulate.EventPlatform, Op: simulate.OpRelease})
}

func answer(c *simulate.CallRecord, v bool) {
	c.Result = &harness.Result{Type: simulate.KindBool, Value: v}
}

func stateAt(fs map[feature]int, path string, n int) (int, bool) {
	step, ok := fs[feature{key: keyState, path: path, n: n}]
	return step, ok
}

// TestSessionStateNamesWhatTheReplicaServedBefore checks the session feature: a reattachment of a Session
// on the replica that served another principal's Session since is a state of its own, whatever the Sessions
// and principals are called, and a host loss makes the replica's process start afresh.
func TestSessionStateNamesWhatTheReplicaServedBefore(t *testing.T) {
	build := func(a, b string, lose bool) map[feature]int {
		h := newHist()
		h.session(simulate.CallPrepareSession, "r1", "s1", a)
		h.session(simulate.CallPrepareSession, "r1", "s2", b)
		if lose {
			h.step++
			h.h.Events = append(h.h.Events, &simulate.Event{Step: h.step, Kind: simulate.EventStep, Op: simulate.OpHostLoss, Replica: "r1"})
		}
		c := h.session(simulate.CallPrepareSession, "r1", "s1", a)
		c.Ctx.Trigger = "reattach"
		return stateFeatures(h.h)
	}
	// one other principal before, another served since, this Session served before
	reattach := 1<<2 | 1<<1 | 1
	fs := build("alice", "bob", false)
	if step, ok := stateAt(fs, stateSession+"prepare_session:reattach", reattach); !ok || step != 3 {
		t.Fatalf("no reattachment after another principal at step 3 in %v", fs)
	}
	if _, ok := stateAt(build("carol", "erin", false), stateSession+"prepare_session:reattach", reattach); !ok {
		t.Error("the same situation with other principals is another feature")
	}
	if _, ok := stateAt(build("alice", "alice", false), stateSession+"prepare_session:reattach", reattach); ok {
		t.Error("one principal's two Sessions counted as two principals")
	}
	if _, ok := stateAt(build("alice", "bob", true), stateSession+"prepare_session:reattach", 0); !ok {
		t.Error("after a host loss the replica's process still remembered what it served")
	}
}

// TestConsentStateComparesTheLastReadWithNow checks the consent feature: a turn on the replica that read the
// owner's consent granted, after it turned pending, differs from the same turn on a replica that never read
// it, and from one where the read saw pending.
func TestConsentStateComparesTheLastReadWithNow(t *testing.T) {
	h := newHist(simulate.ConsentState{Principal: "alice", Consent: simulate.ConsentGranted})
	h.session(simulate.CallPrepareSession, "r1", "s1", "alice")
	h.session(simulate.CallReadUserActions, "r1", "s1", "alice")
	h.consent("alice", simulate.ConsentPending)
	h.session(simulate.CallPrepareTurn, "r1", "s1", "alice")
	h.session(simulate.CallPrepareTurn, "r2", "s1", "alice")
	fs := stateFeatures(h.h)
	if step, ok := stateAt(fs, stateConsent+"prepare_turn", readPending<<2|readGranted); !ok || step != 4 {
		t.Errorf("no turn with consent pending that its replica last read granted (step 4): %v", fs)
	}
	//lint:ignore SA4016 the zero fields are spelled out so that the encoding reads as the state it names
	if step, ok := stateAt(fs, stateConsent+"prepare_turn", readPending<<2|readNever); !ok || step != 5 {
		t.Errorf("no turn with consent pending on a replica that never read it (step 5): %v", fs)
	}
	//lint:ignore SA4016 the zero fields are spelled out so that the encoding reads as the state it names
	if _, ok := stateAt(fs, stateConsent+"read_user_actions", readGranted<<2|readNever); !ok {
		t.Errorf("no first read while granted: %v", fs)
	}
}

// TestOperationStateFollowsHeldWritesAndTheWriter checks the op and release features: a recover while a
// write of its operation is held differs from one after the release let it through; the release counts the
// operations it released and those a recover reported recovered; the last writer is the operation whose
// write the double applied last.
func TestOperationStateFollowsHeldWritesAndTheWriter(t *testing.T) {
	h := newHist()
	sync1 := h.call(simulate.CallSynchronize, "r1", simulate.CallContext{Operation: "op-1"})
	sync2 := h.call(simulate.CallSynchronize, "r2", simulate.CallContext{Operation: "op-2"})
	h.h.Requests = []simulate.Request{
		{Call: sync1.Key, Method: "PUT", Applied: true, ApplyOrder: 1},
		{Call: sync2.Key, Method: "PUT", Held: true},
	}
	rc := h.call(simulate.CallRecover, "r1", simulate.CallContext{Operation: "op-2"})
	answer(rc, true)
	h.release()
	rc2 := h.call(simulate.CallRecover, "r1", simulate.CallContext{Operation: "op-2"})
	answer(rc2, true)
	fs := stateFeatures(h.h)
	// answered True, held, op-1 wrote last (another), the process handled one other operation (op-1)
	if step, ok := stateAt(fs, stateOp+"recover", 2<<6|1<<5|2<<3|1); !ok || step != 3 {
		t.Errorf("no recover with a held write while another operation wrote last (step 3): %v", fs)
	}
	if step, ok := stateAt(fs, stateRelease, 1<<2|1); !ok || step != 4 {
		t.Errorf("no release of one operation reported recovered (step 4): %v", fs)
	}
	// the held write was not applied: op-1 still wrote last, nothing is held any more
	if step, ok := stateAt(fs, stateOp+"recover", 2<<6|0<<5|2<<3|1); !ok || step != 5 {
		t.Errorf("no recover after the release (step 5): %v", fs)
	}
	h.h.Requests[1].Applied, h.h.Requests[1].ApplyOrder = true, 2
	if _, ok := stateAt(stateFeatures(h.h), stateOp+"recover", 2<<6|0<<5|1<<3|1); !ok {
		t.Error("a held write the release applied did not make its operation the last writer")
	}
}

// TestAPlatformStateKeepsASeed checks that a scenario reaching no new line, branch or order of callbacks,
// only a new platform state, joins the corpus, with the step of that state as where its variations insert;
// guided by lines alone it does not join.
func TestAPlatformStateKeepsASeed(t *testing.T) {
	two := func(second string) *simulate.History {
		h := newHist()
		h.session(simulate.CallPrepareSession, "r1", "s1", "alice")
		h.session(simulate.CallPrepareSession, "r1", "s2", second)
		h.h.Coverage = reaching(1, 2, 3).Coverage
		return h.h
	}
	for _, linesOnly := range []bool{false, true} {
		g := newGuide(1, nil)
		g.linesOnly = linesOnly
		if !g.observe(withSteps(4), two("alice")) {
			t.Fatal("the first scenario did not join")
		}
		joined := g.observe(withSteps(4), two("bob"))
		if joined == linesOnly {
			t.Errorf("lines only %v: a scenario whose only news is a second principal on the replica joined: %v", linesOnly, joined)
		}
		if !linesOnly && (g.at[1] != 2 || g.states == 0 || g.covered != 3) {
			t.Errorf("the seed inserts after step %d (want 2); %d states, %d lines", g.at[1], g.states, g.covered)
		}
	}
}

// TestTheLastWriterAfterAReleaseIsTheLastApplied checks that when a release lets two operations' held writes
// through, the last writer is the one the double applied last, every time (not whichever a map yields
// first), and that the generator's model picks the same operation every time too.
func TestTheLastWriterAfterAReleaseIsTheLastApplied(t *testing.T) {
	h := newHist()
	a := h.call(simulate.CallSynchronize, "r1", simulate.CallContext{Operation: "op-1"})
	b := h.call(simulate.CallSynchronize, "r2", simulate.CallContext{Operation: "op-2"})
	h.h.Requests = []simulate.Request{
		{Call: a.Key, Method: "PUT", Held: true, Applied: true, ApplyOrder: 2},
		{Call: b.Key, Method: "PUT", Held: true, Applied: true, ApplyOrder: 1},
	}
	h.release()
	h.call(simulate.CallRecover, "r1", simulate.CallContext{Operation: "op-1"})
	for i := 0; i < 50; i++ {
		// op-1 wrote last (wrote = 1), no write held, the process handled no other operation
		//lint:ignore SA4016 the zero fields are spelled out so that the encoding reads as the state it names
		if _, ok := stateAt(stateFeatures(h.h), stateOp+"recover", 0<<6|0<<5|1<<3|0); !ok {
			t.Fatalf("run %d: the recover did not see op-1, applied last, as the last writer: %v", i, stateFeatures(h.h))
		}
	}
	sc := &simulate.Scenario{Replicas: 2, Steps: []simulate.Step{
		{Op: simulate.OpPrewarm, Boxes: 1, Fault: &simulate.Fault{Kind: simulate.FaultHostLoss}, Double: []simulate.DoubleFault{{Kind: simulate.DoubleHold}}},
		{Op: simulate.OpPrewarm, Boxes: 1, Replica: "r2", Fault: &simulate.Fault{Kind: simulate.FaultHostLoss}, Double: []simulate.DoubleFault{{Kind: simulate.DoubleHold}}},
		{Op: simulate.OpRelease},
		{Op: simulate.OpRecover, Operation: "op-2"},
	}}
	first := situations(sc)
	for i := 0; i < 50; i++ {
		if got := situations(sc); !slices.Equal(got, first) {
			t.Fatalf("the model's situations differ between runs: %v vs %v", got, first)
		}
	}
}

// A Session whose callback raised (its owner's consent pending, say) was not served: a later Session of
// another principal on that replica finds the process served no one. A replica whose most recent Session was
// another principal's says so even when it never served this owner.
func TestOnlyReturnedCallbacksServeAndTheLastPrincipalCounts(t *testing.T) {
	path := stateSession + string(simulate.CallPrepareSession) + ":"
	h := newHist()
	h.session(simulate.CallPrepareSession, "r1", "s1", "bob").Outcome = simulate.OutcomeRaised
	h.session(simulate.CallPrepareSession, "r1", "s2", "alice")
	for n := range 8 {
		if step, ok := stateAt(stateFeatures(h.h), path, n); ok && n != 0 {
			t.Errorf("alice's Session after bob's refused one saw a principal served before (state %03b at step %d)", n, step)
		}
	}
	h = newHist()
	h.session(simulate.CallPrepareSession, "r2", "s3", "dave")
	h.session(simulate.CallPrepareSession, "r2", "s2", "alice")
	// one other principal before, the last Session another's, this Session not served before
	if step, ok := stateAt(stateFeatures(h.h), path, 1<<2|1<<1); !ok || step != 2 {
		t.Errorf("alice on a replica whose last Session was dave's, never alice's, is not told apart: %v", stateFeatures(h.h))
	}
}

// The model predicts a refused material callback while the owner's consent is pending, and no host loss
// from a synchronize that finds the record current (it writes nothing).
func TestModelKnowsRefusalsAndCurrentRecords(t *testing.T) {
	m := newModel(2, map[string]simulate.Principal{"alice": {Consent: "granted"}, "bob": {Consent: "pending"}})
	m.apply(simulate.Step{Op: simulate.OpColdStart, Session: "s1", Principal: "bob", Replica: "r1"})
	if ks := m.keys(simulate.Step{Op: simulate.OpColdStart, Session: "s2", Principal: "alice", Replica: "r1"}); ks[0] != "session cold_start  0000" {
		t.Errorf("bob's refused Session counted as served: %q", ks[0])
	}
	if ks := m.keys(simulate.Step{Op: simulate.OpReattach, Session: "s1", Replica: "r1"}); ks[0] != "session reattach  0001" {
		t.Errorf("bob's Session, refused while his consent is pending, is not its own situation: %q", ks[0])
	}
	m.apply(simulate.Step{Op: simulate.OpPrewarm, Boxes: 1, Replica: "r1"})
	m.apply(simulate.Step{Op: simulate.OpColdStart, Session: "s2", Principal: "alice", Replica: "r1"})
	lose := simulate.Step{Op: simulate.OpPrewarm, Boxes: 1, Replica: "r1", Fault: &simulate.Fault{Kind: simulate.FaultHostLoss},
		Double: []simulate.DoubleFault{{Kind: simulate.DoubleHold, Method: "PUT", Times: 1}}}
	m.apply(lose)
	if len(m.pending) != 0 || m.mem["r1"] == nil || !m.mem["r1"].sessions["s2"] {
		t.Errorf("a synchronize with nothing to write lost its host: pending %v, memory %+v", m.pending, m.mem["r1"])
	}
	m.apply(simulate.Step{Op: simulate.OpConfigChange})
	m.apply(lose)
	if len(m.pending) != 1 || m.mem["r1"] != nil {
		t.Errorf("after a configuration change the synchronize's write was not held with its host lost: pending %v", m.pending)
	}
}

// Only a state read (read_user_actions) leaves a replica's reading of the owner's consent, in the model as in
// the states read off histories (stateWalk.call): a performed user action does not, so a turn after it, once
// the owner's consent turned pending, is not the situation of a turn on a replica that read the old consent
// (UA-AUTHORITY's read cache). Counting it as one made the first such turn, which breaks nothing, take the
// novelty of the one that does.
func TestModelReadsConsentOnlyOnStateReads(t *testing.T) {
	play := func(reading string) string {
		m := newModel(2, map[string]simulate.Principal{"alice": {Consent: "granted"}})
		for _, st := range []simulate.Step{
			{Op: simulate.OpClaim, Session: "s1", Principal: "alice", Replica: "r1"},
			{Op: reading, Session: "s1", Replica: "r1"},
			{Op: simulate.OpSetConsent, Principal: "alice", Consent: simulate.ConsentPending},
		} {
			m.apply(st)
		}
		return m.keys(simulate.Step{Op: simulate.OpTurn, Session: "s1", Attempt: "t1", Replica: "r1"})[1]
	}
	if k := play(simulate.OpReadUserActions); k != "consent turn 21" {
		t.Errorf("a turn after a state read while granted, then pending, is %q, want the stale reading's situation", k)
	}
	if k := play(simulate.OpPerformUserAction); k != "consent turn 20" {
		t.Errorf("a performed user action counted as a reading of consent: %q, want no reading", k)
	}
}
