package explore

import (
	"slices"

	"github.com/astrabox-dev/astrabox/internal/harness"
	"github.com/astrabox-dev/astrabox/internal/simulate"
)

// keyState is the feature key of the platform states a history showed: what the simulated platform and the
// deployment double knew when each callback ran (coverage features carry the callback's coverage key, orders
// keyOrder).
const keyState = "state"

// Kinds of state feature (feature.path begins with one).
const (
	stateSession = "session:" // a callback about a Session: what its replica's process served before
	stateOp      = "op:"      // a callback about an operation: held writes, the last writer, the process's operations
	stateConsent = "consent:" // a callback about a Session: its owner's consent now and as the replica last read it
	stateRelease = "release"  // the release of held requests: how many were pending, how many reported recovered
	stateRefused = "refused:" // a step the platform refused, with its code
)

// Consent as a replica last read it (stateConsent).
const (
	readNever = iota
	readGranted
	readPending
)

// capped counts up to two: none, one, several.
func capped(n int) int { return min(n, 2) }

func bit(b bool) int {
	if b {
		return 1
	}
	return 0
}

// replicaMemory is what one replica's process has served since it started: the Sessions and their principals
// in order, the operations, and the consent each principal had when the process last read a Session's
// user-action state. A host loss (or a process death) starts it afresh.
type replicaMemory struct {
	principals []string // principals served, most recent last, each once
	sessions   map[string]bool
	ops        map[string]bool
	read       map[string]int // by principal: readGranted or readPending
}

func newMemory() *replicaMemory {
	return &replicaMemory{sessions: map[string]bool{}, ops: map[string]bool{}, read: map[string]int{}}
}

// serve records a Session of principal p, moving p to the most recent.
func (m *replicaMemory) serve(session, p string) {
	m.sessions[session] = true
	if i := slices.Index(m.principals, p); i >= 0 {
		m.principals = slices.Delete(m.principals, i, i+1)
	}
	m.principals = append(m.principals, p)
}

// before is what the process served before a callback about a Session of principal p: how many other
// principals' Sessions, and whether the most recent Session it served was another principal's (whether or
// not it ever served p's).
func (m *replicaMemory) before(p string) (others int, lastOther bool) {
	n := len(m.principals)
	return n - bit(slices.Contains(m.principals, p)), n > 0 && m.principals[n-1] != p
}

// stateWalk replays a history's platform state in event order, as the platform and the double saw it.
type stateWalk struct {
	out      map[feature]int // feature -> the step at which it was first reached
	mem      map[string]*replicaMemory
	consent  map[string]string             // principal -> consent now
	reqs     map[string][]simulate.Request // call key -> the double's requests of the call
	pending  map[string]bool               // operations with a held write the double has not released
	answered map[string]bool               // operations whose last recover answered True
	writer   string                        // the operation whose write the double applied last
}

// stateFeatures are the platform states a history reached (the step each was first reached at): for each
// callback, facts the simulated platform holds independently of the provider's code, so that a scenario
// one step from a state no earlier scenario reached is kept even when the provider ran no new line there:
//
//   - session: a callback about a Session, with how many principals' Sessions the replica's process served
//     before (none, one, several), whether the last Session it served was another principal's (whether or
//     not it ever served this one's), and whether the process served this Session before; only a callback
//     that returned serves a Session;
//   - op: a callback about an operation, with its answer (recover), whether a write of the operation is
//     held at the double, whether the operation wrote last at the double (none, it, another), and how many
//     other operations the replica's process handled;
//   - consent: a callback about a Session, with the owner's consent now and as the replica last read it in a
//     state read (never read, granted, pending);
//   - release: how many operations had held writes at a release (none, one, several) and how many of them a
//     recover had reported recovered;
//   - refused: a step the platform refused, and why.
//
// None of them names a value the scenario chose (Sessions, principals, operations, replicas), so the same
// situation in another scenario is the same feature.
func stateFeatures(h *simulate.History) map[feature]int {
	w := &stateWalk{out: map[feature]int{}, mem: map[string]*replicaMemory{}, consent: map[string]string{},
		reqs: map[string][]simulate.Request{}, pending: map[string]bool{}, answered: map[string]bool{}}
	for _, p := range h.Principals {
		w.consent[p.Principal] = p.Consent
	}
	for _, r := range h.Requests {
		if r.Call != "" {
			w.reqs[r.Call] = append(w.reqs[r.Call], r)
		}
	}
	calls := map[string]*simulate.CallRecord{}
	for _, e := range h.Events {
		switch {
		case e.Call != nil:
			calls[e.Call.Key] = e.Call
			w.call(e.Step, e.Call)
		case e.Consent != nil:
			w.consent[e.Consent.Principal] = e.Consent.Consent
		case e.Code != "":
			w.reach(e.Step, feature{key: keyState, path: stateRefused + e.Op + ":" + e.Code})
		case e.Op == simulate.OpRelease && e.Kind == simulate.EventPlatform:
			w.release(e.Step, calls)
		case e.Op == simulate.OpHostLoss && e.Kind == simulate.EventStep && e.Replica != "":
			delete(w.mem, e.Replica)
		}
	}
	return w.out
}

func (w *stateWalk) reach(step int, f feature) {
	if _, ok := w.out[f]; !ok {
		w.out[f] = step
	}
}

func (w *stateWalk) memory(replica string) *replicaMemory {
	m := w.mem[replica]
	if m == nil {
		m = newMemory()
		w.mem[replica] = m
	}
	return m
}

// call takes one callback: the features of the state it ran in, then what it changed.
func (w *stateWalk) call(step int, c *simulate.CallRecord) {
	m := w.memory(c.Replica)
	if s, p := c.Ctx.Session, c.Ctx.Principal; s != "" && p != "" {
		others, lastOther := m.before(p)
		w.reach(step, feature{key: keyState, path: stateSession + string(c.Method) + ":" + c.Ctx.Trigger, n: capped(others)<<2 | bit(lastOther)<<1 | bit(m.sessions[s])})
		read := m.read[p]
		now := readGranted
		if w.consent[p] == simulate.ConsentPending {
			now = readPending
		}
		w.reach(step, feature{key: keyState, path: stateConsent + string(c.Method), n: now<<2 | read})
		if c.Method == simulate.CallReadUserActions && c.Outcome == simulate.OutcomeReturned {
			m.read[p] = now
		}
		if c.Outcome == simulate.OutcomeReturned {
			m.serve(s, p)
		}
	}
	if op := c.Ctx.Operation; op != "" {
		answer := 0
		if c.Outcome == simulate.OutcomeReturned && simulate.KindBool.Of(c.Result) {
			answer = 1 + bit(c.Result.Value)
		}
		wrote := 0
		if w.writer != "" {
			wrote = 1 + bit(w.writer != op)
		}
		others := len(m.ops) - bit(m.ops[op])
		w.reach(step, feature{key: keyState, path: stateOp + string(c.Method), n: answer<<6 | bit(w.pending[op])<<5 | wrote<<3 | capped(others)})
		if c.Method == simulate.CallRecover && answer > 0 {
			w.answered[op] = answer == 2
		}
		m.ops[op] = true
		for _, r := range w.reqs[c.Key] {
			switch {
			case r.Held:
				w.pending[op] = true
			case r.Applied && isWrite(r.Method):
				w.writer = op
			}
		}
	}
	if c.Outcome == simulate.OutcomeHostLoss || c.Outcome == simulate.OutcomeDied {
		delete(w.mem, c.Replica)
	}
}

// release takes a release of held requests: its feature, then the writes it let through.
func (w *stateWalk) release(step int, calls map[string]*simulate.CallRecord) {
	recovered := 0
	for op := range w.pending {
		recovered += bit(w.answered[op])
	}
	w.reach(step, feature{key: keyState, path: stateRelease, n: capped(len(w.pending))<<2 | capped(recovered)})
	last := int64(0) // the writer is the held write the double applied last
	for key, rs := range w.reqs {
		c := calls[key]
		if c == nil || !w.pending[c.Ctx.Operation] {
			continue
		}
		for _, r := range rs {
			if r.Held && r.Applied && isWrite(r.Method) && r.ApplyOrder > last {
				last, w.writer = r.ApplyOrder, c.Ctx.Operation
			}
		}
	}
	w.pending = map[string]bool{}
}

// isWrite tells whether an HTTP method changes state at the double.
func isWrite(method string) bool {
	switch method {
	case "GET", "HEAD", "OPTIONS", "":
		return false
	}
	return true
}

// callsIn are the callbacks a history called.
func callsIn(h *simulate.History) []simulate.Callback {
	var out []simulate.Callback
	for _, c := range h.Calls() {
		if !slices.Contains(out, c.Method) {
			out = append(out, c.Method)
		}
	}
	return out
}

// implemented are the callbacks a loaded provider overrides (plan left out: every replica plans).
func implemented(info *harness.LoadInfo) []simulate.Callback {
	if info == nil {
		return nil
	}
	var out []simulate.Callback
	for _, cb := range []simulate.Callback{simulate.CallSynchronize, simulate.CallRecover, simulate.CallPrepareSession,
		simulate.CallPrepareTurn, simulate.CallReadUserActions, simulate.CallPerformUserAction} {
		if m, ok := info.Methods[string(cb)]; ok && m.Overridden {
			out = append(out, cb)
		}
	}
	return out
}
