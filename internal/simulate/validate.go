package simulate

import (
	"fmt"
	"strings"

	"github.com/astrabox-dev/astrabox/internal/double"
)

// Validate checks that the scenario is one the platform could play, filling in defaults.
func (s *Scenario) Validate() error {
	errAt := func(line int, format string, args ...any) error {
		return &ScenarioError{File: s.File, Line: line, Msg: fmt.Sprintf(format, args...)}
	}
	if s.Name == "" {
		return errAt(1, "missing `name`")
	}
	if s.Replicas == 0 {
		s.Replicas = 2
	}
	if s.Replicas < 1 || s.Replicas > 16 {
		return errAt(s.lineOf("replicas"), "`replicas` must be between 1 and 16, got %d", s.Replicas)
	}
	if s.Engine == "" {
		s.Engine = EngineClaudeCode
	}
	if _, ok := adapters[s.Engine]; !ok {
		return errAt(s.lineOf("engine"), "unknown engine %q; use one of %s", s.Engine, strings.Join(AdapterNames(), ", "))
	}
	if s.Backend == nil {
		s.Backend = &Backend{ProfileExclusive: true, OwnsSandbox: true}
	}
	if s.Principals == nil {
		s.Principals = map[string]Principal{}
	}
	for name, p := range s.Principals {
		if p.Consent == "" {
			p.Consent = "granted"
		}
		if p.Consent != "granted" && p.Consent != "pending" {
			return errAt(s.lineOf("principals"), "principal %q: consent must be granted or pending, got %q", name, p.Consent)
		}
		s.Principals[name] = p
	}
	if len(s.Agents) == 0 {
		s.Agents = []AgentSpec{{ID: "agent-1"}}
	}
	agents := map[string]bool{}
	for i := range s.Agents {
		a := &s.Agents[i]
		if a.ID == "" {
			return errAt(s.lineOf("agents"), "agent %d has no `id`", i+1)
		}
		if a.Creator == "" {
			a.Creator = "alice"
		}
		if a.Version == 0 {
			a.Version = 1
		}
		agents[a.ID] = true
	}
	if s.Deadlines == nil {
		s.Deadlines = &Deadlines{}
	}
	if key, err := s.Deadlines.check(); err != nil {
		line := s.lineOf("deadlines")
		if l := s.keyLines[key]; l > 0 {
			line = l
		}
		return errAt(line, "%v", err)
	}
	s.Deadlines.fill()
	if len(s.Steps) == 0 {
		return errAt(s.lineOf("steps"), "no `steps`; add at least one step such as `- op: cold_start`")
	}
	sessions := map[string]bool{}
	for i := range s.Steps {
		if err := s.validateStep(i, agents, sessions); err != nil {
			return err
		}
	}
	if i, err := checkClock(s.Steps); err != nil {
		return errAt(max(1, s.Steps[i].Line), "%v", err)
	}
	return nil
}

// validateStep checks step i against its op's spec and the scenario, filling in defaults; agents are the
// declared Agents and sessions those started by earlier steps (updated).
func (s *Scenario) validateStep(i int, agents, sessions map[string]bool) error {
	errAt := func(line int, format string, args ...any) error {
		return &ScenarioError{File: s.File, Line: line, Msg: fmt.Sprintf(format, args...)}
	}
	st := &s.Steps[i]
	line := st.Line
	if line == 0 {
		line = 1
	}
	spec, ok := opRegistry[st.Op]
	if !ok {
		return errAt(line, "step %d: unknown op %q; use one of %s", i+1, st.Op, strings.Join(Ops(), ", "))
	}
	allowed := map[string]bool{"op": true}
	for _, f := range append(append([]string{}, spec.required...), spec.allowed...) {
		allowed[f] = true
	}
	for _, k := range st.fields() {
		if !allowed[k] {
			return errAt(line, "step %d (%s): field %q does not apply to this step", i+1, st.Op, k)
		}
	}
	for _, f := range spec.required {
		if !st.has(f) {
			return errAt(line, "step %d (%s): missing `%s`", i+1, st.Op, f)
		}
	}
	if err := st.checkDurations(); err != nil {
		return errAt(line, "step %d (%s): %v", i+1, st.Op, err)
	}
	if st.Replica != "" && replicaIndex(st.Replica, s.Replicas) < 0 {
		return errAt(line, "step %d (%s): replica %q does not exist; this scenario has r1 to r%d", i+1, st.Op, st.Replica, s.Replicas)
	}
	if st.Agent != "" && !agents[st.Agent] {
		return errAt(line, "step %d (%s): unknown agent %q; declare it under `agents`", i+1, st.Op, st.Agent)
	}
	if st.Principal != "" {
		if _, ok := s.Principals[st.Principal]; !ok {
			s.Principals[st.Principal] = Principal{Consent: "granted"}
		}
	}
	switch {
	case spec.session == SessionStarts:
		sessions[st.Session] = true
	case spec.session == SessionNeeds && !sessions[st.Session]:
		return errAt(line, "step %d (%s): session %q is not started by an earlier claim or cold_start step", i+1, st.Op, st.Session)
	}
	if spec.validate != nil {
		if msg := spec.validate(st); msg != "" {
			return errAt(line, "step %d (%s): %s", i+1, st.Op, msg)
		}
	}
	if st.Via != "" && st.Via != "api" && st.Via != "console" {
		return errAt(line, "step %d (%s): via must be api or console", i+1, st.Op)
	}
	if st.Scope != "" && st.Scope != "read" && st.Scope != "write" && st.Scope != "none" {
		return errAt(line, "step %d (%s): scope must be read, write or none", i+1, st.Op)
	}
	if msg := st.Fault.check(); msg != "" {
		return errAt(line, "step %d (%s): %s", i+1, st.Op, msg)
	}
	if msg := st.validateFills(); msg != "" {
		return errAt(line, "step %d (%s): %s", i+1, st.Op, msg)
	}
	for _, d := range st.Double {
		if _, err := double.ParseFaultKind(d.Kind); err != nil {
			return errAt(line, "step %d (%s): %v", i+1, st.Op, err)
		}
	}
	return nil
}

// check returns what is wrong with a callback fault, or "" (also for no fault).
func (f *Fault) check() string {
	if f == nil {
		return ""
	}
	switch f.Kind {
	case FaultTimeout, FaultCancel, FaultHostLoss, FaultSupersede:
	default:
		return fmt.Sprintf("fault kind %q; use timeout, cancel, host_loss or supersede", f.Kind)
	}
	switch f.Change {
	case "", "refresh", "version", "pool", "generation":
	default:
		return fmt.Sprintf("fault change %q; use refresh, version, pool or generation", f.Change)
	}
	if f.Change != "" && f.Kind != FaultSupersede {
		return "`change` applies only to the supersede fault"
	}
	if f.On != "" && ((f.On != CancelOnRequest && f.On != CancelOnWrite) || f.Kind != FaultCancel) {
		return fmt.Sprintf("fault on %q; only the cancel fault takes `on`, and its values are %s and %s", f.On, CancelOnRequest, CancelOnWrite)
	}
	return ""
}

// The kinds of fault the deployment double applies (DoubleFault.Kind): the double's own names
// (double.FaultKind's String), which double.ParseFaultKind, the one place they are validated, reads.
const (
	DoubleDelay       = "delay"
	DoubleHold        = "hold"
	DoubleUnavailable = "unavailable"
	DoubleDrop        = "drop"
)
