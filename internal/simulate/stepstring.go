package simulate

import (
	"fmt"
	"strings"
)

// String is the step as the timeline shows it: the op, its named values and its callback fault, such as
// `turn session=s1 attempt=a1 replica=r2 fault=cancel` or `advance 60s`.
func (st Step) String() string {
	s := st.Op
	add := func(k, v string) {
		if v != "" {
			s += " " + k + "=" + v
		}
	}
	add("agent", st.Agent)
	add("session", st.Session)
	add("principal", st.Principal)
	add("attempt", st.Attempt)
	add("operation", st.Operation)
	add("action", st.Action)
	add("replica", st.Replica)
	if st.Op == OpAdvance {
		s += fmt.Sprintf(" %gs", st.Seconds)
	}
	if st.Fault != nil {
		s += " fault=" + st.Fault.Kind
	}
	return s
}

// Brief is the step as a report's evidence lists a shrunk scenario: the op and the values that tell steps
// apart, with every fault kind, such as `turn session=s1 attempt=a1 replica=r2 fault=cancel double=hold`.
func (st Step) Brief() string {
	var parts []string
	add := func(k, v string) {
		if v != "" {
			parts = append(parts, k+"="+v)
		}
	}
	add("session", st.Session)
	add("attempt", st.Attempt)
	add("principal", st.Principal)
	add("operation", st.Operation)
	add("action", st.Action)
	add("consent", st.Consent)
	add("replica", st.Replica)
	if st.Fault != nil {
		add("fault", st.Fault.Kind)
	}
	for _, d := range st.Double {
		add("double", d.Kind)
	}
	return strings.TrimSpace(st.Op + " " + strings.Join(parts, " "))
}

// StepLines lists the scenario's steps, one Brief line each, for reports and saved failures.
func (s *Scenario) StepLines() []string {
	var out []string
	for _, st := range s.Steps {
		out = append(out, st.Brief())
	}
	return out
}
