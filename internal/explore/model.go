package explore

import (
	"fmt"
	"maps"
	"slices"

	"github.com/astrabox-dev/astrabox/internal/simulate"
)

// model is the generator's view of the platform's state as steps are added, from the steps alone (no
// provider ran yet): what each replica's process served (Sessions, their principals, operations, consent as
// last read), each principal's consent, the operations with a held write and those recovered since, the
// operation that wrote last and whether a configuration change came after. Its situations (keys) are the
// platform states stateFeatures reads off histories, as far as steps tell them; the guide keeps every
// situation observed scenarios showed (novel), and the generator prefers, among the ops that can come next,
// one whose step puts the platform in a situation none showed (novelty.go).
type model struct {
	replicas  int
	owner     map[string]string // Session -> principal
	mem       map[string]*replicaMemory
	consent   map[string]string
	pending   map[string]bool // operations with a held write
	recovered map[string]bool // pending operations a recover step asked about
	writer    string
	stale     bool // a configuration change came after the last write
	ops       int
}

func newModel(replicas int, principals map[string]simulate.Principal) *model {
	m := &model{replicas: max(1, replicas), owner: map[string]string{}, mem: map[string]*replicaMemory{}, consent: map[string]string{},
		pending: map[string]bool{}, recovered: map[string]bool{}}
	for p, pr := range principals {
		m.consent[p] = pr.Consent
	}
	return m
}

// replica is the replica a step runs on, as the platform picks it.
func (m *model) replica(st simulate.Step) string {
	if i, ok := simulate.ParseReplica(st.Replica); ok && i <= m.replicas {
		return st.Replica
	}
	return simulate.ReplicaName(1)
}

func (m *model) memory(r string) *replicaMemory {
	rm := m.mem[r]
	if rm == nil {
		rm = newMemory()
		m.mem[r] = rm
	}
	return rm
}

// sessionOps are the steps about a Session that make the platform call a callback, from each op's spec
// (opTables).
var sessionOps = ops.sessionOps

// keys are the situations step st puts the platform in, given the state before it. A step about a Session
// says what its replica served before (other principals, whether the last was another's, this Session) and
// whether its callback is refused, so that a reattachment refused while its owner's consent is pending is not
// the same situation as one that hands out material.
func (m *model) keys(st simulate.Step) []string {
	fault := ""
	if st.Fault != nil {
		fault = st.Fault.Kind
	}
	if _, ok := sessionOps[st.Op]; ok {
		p := m.owner[st.Session]
		if st.Principal != "" {
			p = st.Principal
		}
		rm := m.memory(m.replica(st))
		others, lastOther := rm.before(p)
		now := readGranted
		if m.consent[p] == simulate.ConsentPending {
			now = readPending
		}
		return []string{
			fmt.Sprintf("session %s %s %d%d%d%d", st.Op, fault, capped(others), bit(lastOther), bit(rm.sessions[st.Session]), bit(m.refused(st, p))),
			fmt.Sprintf("consent %s %d%d", st.Op, now, rm.read[p]),
		}
	}
	switch st.Op {
	case simulate.OpPrewarm:
		return []string{fmt.Sprintf("prewarm %s %d %d", fault, capped(len(m.pending)), m.wrote(""))}
	case simulate.OpRecover:
		rm := m.memory(m.replica(st))
		return []string{fmt.Sprintf("recover %d %d %d %d", bit(m.pending[st.Operation]), bit(m.recovered[st.Operation]), m.wrote(st.Operation), capped(len(rm.ops)-bit(rm.ops[st.Operation])))}
	case simulate.OpRelease:
		return []string{fmt.Sprintf("release %d %d", capped(len(m.pending)), capped(len(m.recovered)))}
	case simulate.OpSetConsent:
		stale := 0
		for _, rm := range m.mem {
			if r := rm.read[st.Principal]; r != readNever && (r == readPending) != (st.Consent == simulate.ConsentPending) {
				stale++
			}
		}
		return []string{fmt.Sprintf("set_consent %s %d", st.Consent, capped(stale))}
	case simulate.OpConfigChange:
		return []string{fmt.Sprintf("config_change %d %d", capped(len(m.pending)), m.wrote(""))}
	case simulate.OpHostLoss:
		rm := m.mem[m.replica(st)]
		return []string{fmt.Sprintf("host_loss %d", bit(rm != nil && (len(rm.sessions) > 0 || len(rm.ops) > 0)))}
	}
	return []string{st.Op}
}

// wrote is how the last write relates to operation op: none, op's, another's, another's before a
// configuration change.
func (m *model) wrote(op string) int {
	switch {
	case m.writer == "":
		return 0
	case m.writer == op:
		return 1
	case m.stale:
		return 3
	}
	return 2
}

// current tells whether the Agent's record is current: a write of it landed, no configuration change came
// after, and no write is still held. A synchronize then has nothing to write, so a host loss armed on its
// write never comes.
func (m *model) current() bool { return m.writer != "" && !m.stale && len(m.pending) == 0 }

// refused tells whether the platform's callback for Session step st of principal p is refused: a conforming
// provider refuses material while the owner's consent is pending (UA-AUTHORITY), but reads and performs user
// actions.
func (m *model) refused(st simulate.Step, p string) bool {
	return m.consent[p] == simulate.ConsentPending && st.Op != simulate.OpReadUserActions && st.Op != simulate.OpPerformUserAction
}

// apply takes step st into the state.
func (m *model) apply(st simulate.Step) {
	r := m.replica(st)
	if _, ok := sessionOps[st.Op]; ok {
		if st.Principal != "" {
			m.owner[st.Session] = st.Principal
		}
		p := m.owner[st.Session]
		rm := m.memory(r)
		if st.Op == simulate.OpReadUserActions {
			rm.read[p] = readGranted
			if m.consent[p] == simulate.ConsentPending {
				rm.read[p] = readPending
			}
		}
		if !m.refused(st, p) {
			rm.serve(st.Session, p)
		}
		return
	}
	switch st.Op {
	case simulate.OpPrewarm:
		for b := 1; b <= max(1, st.Boxes); b++ {
			m.ops++
			op := fmt.Sprintf("op-%d", m.ops)
			m.memory(r).ops[op] = true
			switch {
			case st.Fault != nil && st.Fault.Kind == simulate.FaultHostLoss && !m.current():
				// the host is lost at the synchronize's write; one that finds the record current writes nothing
				if len(st.Double) > 0 {
					m.pending[op] = true
				}
				delete(m.mem, r)
			case st.Fault == nil && !m.current():
				m.writer, m.stale = op, false
			}
		}
	case simulate.OpRecover:
		m.memory(r).ops[st.Operation] = true
		if m.pending[st.Operation] {
			m.recovered[st.Operation] = true
		}
	case simulate.OpRelease:
		// an unfenced held write lands; which one lands last is taken in name order (the steps do not say)
		for _, op := range slices.Sorted(maps.Keys(m.pending)) {
			if !m.recovered[op] {
				m.writer, m.stale = op, false
			}
		}
		m.pending, m.recovered = map[string]bool{}, map[string]bool{}
	case simulate.OpSetConsent:
		m.consent[st.Principal] = st.Consent
	case simulate.OpConfigChange:
		m.stale = m.writer != ""
	case simulate.OpHostLoss:
		delete(m.mem, r)
	}
}

// situations are the keys scenario sc's steps put the platform in, in order.
func situations(sc *simulate.Scenario) []string {
	m := newModel(sc.Replicas, sc.Principals)
	var out []string
	for _, st := range sc.Steps {
		out = append(out, m.keys(st)...)
		m.apply(st)
	}
	return out
}
