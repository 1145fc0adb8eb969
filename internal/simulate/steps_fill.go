package simulate

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Fills are step values the platform fills in at run time from what the provider answered so far, so that a
// scenario exercises the provider's own operations, validity periods and write positions rather than the
// author's guesses (docs/scenarios.md, "Filled values"). A step holding a fill is replaced, in the scenario
// the history records (History.Played), by the concrete steps it stood for; replaying the recorded scenario
// gives the same history.
const (
	// FillOffered, as a perform_user_action's `action`, performs every operation the Session's last state
	// (the last GET or POST answer) offered, one step each, in the order offered.
	FillOffered = "$offered"
	// FillUnresolved, as a recover's `operation`, recovers every operation still unresolved when the step
	// starts, one step each, in the order the operations ran.
	FillUnresolved = "$unresolved"
	// FillEach, as a double fault's `write`, repeats the step once per write position 1..N, where N is the
	// most writes (PUT, POST, DELETE) any fault-free call of the step's callback made so far in the run.
	FillEach = "$each"
	// FillValidity, as a turn's `live_for`, keeps the write live ValidityFactor times the longest finite
	// turn_validity_seconds the provider returned so far in the run (this turn's answer included); 0 when it
	// returned none.
	FillValidity = "$validity"
)

// ValidityFactor is how many validity periods a `live_for: $validity` write stays live: more than two, so
// that at least two refreshes happen whatever the period (the clock is virtual: one second and a day cost
// the same).
const ValidityFactor = 2.5

// LiveFor is how long a turn's write stays live, in host seconds: a number, or FillValidity.
type LiveFor struct {
	Seconds float64
	// Fill is FillValidity when the duration is filled in at run time, else empty.
	Fill string
}

// IsZero tells whether the duration is absent (no fill, 0 seconds).
func (l LiveFor) IsZero() bool { return l.Fill == "" && l.Seconds == 0 }

func (l LiveFor) value() any {
	if l.Fill != "" {
		return l.Fill
	}
	return l.Seconds
}

// MarshalYAML writes the number of seconds, or the fill.
func (l LiveFor) MarshalYAML() (any, error) { return l.value(), nil }

// MarshalJSON writes the number of seconds, or the fill.
func (l LiveFor) MarshalJSON() ([]byte, error) { return json.Marshal(l.value()) }

// UnmarshalYAML reads a number of seconds or a fill.
func (l *LiveFor) UnmarshalYAML(n *yaml.Node) error {
	v, err := scalarOrFill(n, "live_for", FillValidity, "a number of host seconds")
	if err != nil {
		return err
	}
	if v.fill != "" {
		*l = LiveFor{Fill: v.fill}
		return nil
	}
	f, err := strconv.ParseFloat(v.text, 64)
	if err != nil {
		return fmt.Errorf("line %d: `live_for` is `%s`, but it must be a number of host seconds or %s", n.Line, v.text, FillValidity)
	}
	*l = LiveFor{Seconds: f}
	return nil
}

// UnmarshalJSON reads a number of seconds or a fill.
func (l *LiveFor) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		*l = LiveFor{Fill: s}
		return nil
	}
	*l = LiveFor{}
	return json.Unmarshal(b, &l.Seconds)
}

// Position is which write of a step a double fault acts on: the Nth (1-based), or FillEach.
type Position struct {
	N int
	// Each is set for FillEach.
	Each bool
}

// IsZero tells whether no position is given.
func (w Position) IsZero() bool { return !w.Each && w.N == 0 }

func (w Position) value() any {
	if w.Each {
		return FillEach
	}
	return w.N
}

// MarshalYAML writes the position or the fill.
func (w Position) MarshalYAML() (any, error) { return w.value(), nil }

// MarshalJSON writes the position or the fill.
func (w Position) MarshalJSON() ([]byte, error) { return json.Marshal(w.value()) }

// UnmarshalYAML reads a position or FillEach.
func (w *Position) UnmarshalYAML(n *yaml.Node) error {
	v, err := scalarOrFill(n, "write", FillEach, "a write number (1 is the step's first write)")
	if err != nil {
		return err
	}
	if v.fill != "" {
		*w = Position{Each: true}
		return nil
	}
	i, err := strconv.Atoi(v.text)
	if err != nil {
		return fmt.Errorf("line %d: `write` is `%s`, but it must be a write number (1 is the step's first write) or %s", n.Line, v.text, FillEach)
	}
	*w = Position{N: i}
	return nil
}

// UnmarshalJSON reads a position or FillEach.
func (w *Position) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		*w = Position{Each: s == FillEach}
		return nil
	}
	*w = Position{}
	return json.Unmarshal(b, &w.N)
}

type scalarFill struct{ text, fill string }

// scalarOrFill reads a scalar that is either a literal or the one fill the field accepts.
func scalarOrFill(n *yaml.Node, field, fill, literal string) (scalarFill, error) {
	if n.Kind != yaml.ScalarNode {
		return scalarFill{}, fmt.Errorf("line %d: `%s` must be %s or %s", n.Line, field, literal, fill)
	}
	if strings.HasPrefix(n.Value, "$") {
		if n.Value != fill {
			return scalarFill{}, fmt.Errorf("line %d: `%s` is `%s`, an unknown fill; the one fill `%s` takes is %s", n.Line, field, n.Value, field, fill)
		}
		return scalarFill{fill: fill}, nil
	}
	return scalarFill{text: n.Value}, nil
}

// hasFill tells whether a step holds a value the platform fills in at run time.
func (st *Step) hasFill() bool {
	if st.Action == FillOffered || st.Operation == FillUnresolved || st.LiveFor.Fill != "" {
		return true
	}
	return st.eachWrite() >= 0
}

// eachWrite is the index of the step's double fault whose write is FillEach, or -1.
func (st *Step) eachWrite() int {
	for i, d := range st.Double {
		if d.Write.Each {
			return i
		}
	}
	return -1
}

// validateFills checks the fills of a step (each appears only in the field that takes it), its live_for and
// its double faults' write positions, and returns what is wrong, or "".
func (st *Step) validateFills() string {
	if strings.HasPrefix(st.Action, "$") && st.Action != FillOffered {
		return fmt.Sprintf("action %q is an unknown fill; use an operation id or %s", st.Action, FillOffered)
	}
	if strings.HasPrefix(st.Operation, "$") && (st.Operation != FillUnresolved || st.Op != OpRecover) {
		return fmt.Sprintf("operation %q: only recover takes a fill, and its one fill is %s", st.Operation, FillUnresolved)
	}
	if v := st.LiveFor.Seconds; v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return fmt.Sprintf("live_for %g: use a finite number of host seconds, 0 or more, or %s", v, FillValidity)
	}
	each := 0
	for _, d := range st.Double {
		if d.Write.Each {
			each++
		}
		if !d.Write.Each && d.Write.N < 0 {
			return fmt.Sprintf("double fault write %d: a write number starts at 1", d.Write.N)
		}
	}
	if each > 1 {
		return fmt.Sprintf("%s may fill the write of one double fault of a step only", FillEach)
	}
	return ""
}

// stepCallback is the provider callback whose writes a step's double faults are meant for.
func stepCallback(op string) string {
	switch op {
	case OpPrewarm:
		return "synchronize"
	case OpRecover:
		return "recover"
	case OpTurn, OpRetry:
		return "prepare_turn"
	case OpPerformUserAction:
		return "perform_user_action"
	case OpReadUserActions:
		return "read_user_actions"
	case OpClaim, OpColdStart, OpReattach, OpReplaceSandbox:
		return "prepare_session"
	}
	return ""
}

// fillState is what the platform learnt from the provider that fills draw on.
type fillState struct {
	// offered is each Session's operations in its last applied state.
	offered map[string][]string
	// maxValidity is the longest finite turn_validity_seconds returned in this run.
	maxValidity float64
}

// playSteps plays the scenario's steps in order. A step holding a fill is first replaced, in the played
// scenario, by the concrete steps it stands for (none, when there is nothing to fill it with); a live_for
// fill is resolved while its turn runs.
func (p *platform) playSteps() {
	for i := 0; i < len(p.sc.Steps); i++ {
		if err := p.ctx.Err(); err != nil {
			p.hist.Aborted = "interrupted: " + err.Error()
			break
		}
		if p.runErr != nil {
			break
		}
		if p.o.Hang.Tripped() {
			p.hist.Aborted = fmt.Sprintf("%s (%s); the scenario stopped before step %d of %d", StoppedByHang, p.o.Hang.First(), i+1, len(p.sc.Steps))
			p.event(&Event{Kind: EventPlatform, Message: "scenario stopped: " + p.hist.Aborted})
			break
		}
		if concrete, ok := p.expand(p.sc.Steps[i]); ok {
			steps := make([]Step, 0, len(p.sc.Steps)+len(concrete))
			steps = append(append(append(steps, p.sc.Steps[:i]...), concrete...), p.sc.Steps[i+1:]...)
			p.sc.Steps = steps
			if len(concrete) == 0 {
				i--
				continue
			}
		}
		st := &p.sc.Steps[i]
		p.step = i + 1
		p.stepOp = st.Op
		p.runStep(st)
		if st.LiveFor.Fill != "" { // the turn never reached its write: record what the fill stood for
			p.fillLiveFor(st)
		}
	}
	p.step = len(p.sc.Steps) + 1
	p.stepOp = "end"
}

// expand returns the concrete steps a step with an expanding fill stands for; ok is false when the step has
// none.
func (p *platform) expand(st Step) ([]Step, bool) {
	if st.Action != FillOffered && st.Operation != FillUnresolved && st.eachWrite() < 0 {
		return nil, false
	}
	out := []Step{st}
	if st.Action == FillOffered {
		out = eachValue(out, func(s *Step, v string) { s.Action = v }, p.fills.offered[st.Session])
	}
	if st.Operation == FillUnresolved {
		var labels []string
		for _, op := range p.ops {
			if op.state == "unresolved" {
				labels = append(labels, op.label)
			}
		}
		out = eachValue(out, func(s *Step, v string) { s.Operation = v }, labels)
	}
	if i := st.eachWrite(); i >= 0 {
		var positions []string
		for n := 1; n <= p.writePositions(stepCallback(st.Op)); n++ {
			positions = append(positions, strconv.Itoa(n))
		}
		out = eachValue(out, func(s *Step, v string) {
			n, _ := strconv.Atoi(v)
			s.Double[i].Write = Position{N: n}
		}, positions)
	}
	return out, true
}

// each returns one copy of every step per value, set by set.
func eachValue(steps []Step, set func(*Step, string), values []string) []Step {
	var out []Step
	for _, st := range steps {
		for _, v := range values {
			c := st
			c.Double = append([]DoubleFault(nil), st.Double...)
			if st.Fault != nil {
				f := *st.Fault
				c.Fault = &f
			}
			set(&c, v)
			out = append(out, c)
		}
	}
	return out
}

// writePositions is the most writes any call of a callback made so far in this run, counting only calls that
// returned in steps without faults.
func (p *platform) writePositions(method string) int {
	clean := map[string]bool{}
	for _, e := range p.hist.Events {
		if e.Call == nil || string(e.Call.Method) != method || e.Call.Outcome != OutcomeReturned || e.Step < 1 || e.Step > len(p.sc.Steps) {
			continue
		}
		if st := p.sc.Steps[e.Step-1]; st.Fault == nil && len(st.Double) == 0 {
			clean[e.Call.Key] = true
		}
	}
	writes := map[string]int{}
	most := 0
	for _, rq := range p.dbl.Requests() {
		if rq.Call == nil || !clean[rq.Call.CallID] {
			continue
		}
		if rq.Write { // as the double's write faults count them, a service's classification included
			writes[rq.Call.CallID]++
			most = max(most, writes[rq.Call.CallID])
		}
	}
	return most
}

// fillLiveFor resolves a `live_for: $validity` from the validity periods returned so far.
func (p *platform) fillLiveFor(st *Step) {
	if st.LiveFor.Fill == FillValidity {
		st.LiveFor = LiveFor{Seconds: ValidityFactor * p.fills.maxValidity}
	}
}

// sawValidity records a finite validity period the provider returned.
func (p *platform) sawValidity(v float64) {
	p.fills.maxValidity = max(p.fills.maxValidity, v)
}

// sawState records the operations a Session's state offered.
func (p *platform) sawState(session string, actions []string) {
	if p.fills.offered == nil {
		p.fills.offered = map[string][]string{}
	}
	p.fills.offered[session] = append([]string(nil), actions...)
}
