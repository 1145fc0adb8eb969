package harness

import (
	"testing"
	"time"
)

// TestDeadlineCountsTheProvidersTimeOnly reproduces issue 25.4: the callback returns at once, but the kit is
// slow to take its reply (held back here as a loaded machine does while it reads and decodes a large
// material) for longer than the callback's deadline and the cancel's grace together. The reply must still be
// the callback's, with no cancel sent: the deadline stopped when the callback's own code ended. Before the
// harness said so, the kit sent a cancel at the deadline, found no reply within the grace, and killed the
// process as one that blocked it.
func TestDeadlineCountsTheProvidersTimeOnly(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python (skipped under -short)")
	}
	dir := fixtureDir(t, "good")
	lim := testLimits()
	lim.Grace = 300 * time.Millisecond
	p, _ := startLoaded(t, dir, "good_provider.provider:Provider", Options{Sandbox: &fakeSandbox{files: map[string][]byte{}}, Limits: lim})
	const deadline = 200 * time.Millisecond
	var sent time.Time
	BeforeReply = func() {
		// Hold the reply until the deadline and the grace have both passed (a bounded poll on the clock).
		for time.Since(sent) < deadline+lim.Grace+300*time.Millisecond {
			time.Sleep(10 * time.Millisecond)
		}
	}
	t.Cleanup(func() { BeforeReply = nil })
	uctx := map[string]any{"context": map[string]any{"session_id": "s-1", "owner_id": "u-1", "agent_id": "a-1"}}
	sent = time.Now()
	r, err := call(t, p, "read_user_actions", uctx, deadline)
	BeforeReply = nil
	if err != nil {
		t.Fatalf("a callback that returned at once was failed for the kit's slowness: %v", err)
	}
	if !r.OK || r.CancelSent || r.HeldPastDeadline {
		t.Fatalf("reply %+v: want OK, no cancel sent, not held past the deadline", r)
	}
	if r.Duration >= deadline {
		t.Errorf("the callback's duration %s counts the kit's time", r.Duration)
	}
	// The process is still usable.
	if r, err := call(t, p, "read_user_actions", uctx, 5*time.Second); err != nil || !r.OK {
		t.Fatalf("next call: %v %+v", err, r)
	}
}
