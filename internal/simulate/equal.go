package simulate

import "reflect"

// Equal tells whether two steps are the same step: every field, the callback fault and the double faults
// compared by value (an empty and a missing list of double faults are the same), and the same line.
func (st Step) Equal(o Step) bool {
	if (st.Fault == nil) != (o.Fault == nil) || (st.Fault != nil && *st.Fault != *o.Fault) {
		return false
	}
	if len(st.Double) != len(o.Double) {
		return false
	}
	for i := range st.Double {
		if st.Double[i] != o.Double[i] {
			return false
		}
	}
	a, b := st, o
	a.Fault, b.Fault, a.Double, b.Double = nil, nil, nil, nil
	return reflect.DeepEqual(a, b)
}

// Clone returns a deep copy of the step: its callback fault and double faults are its own.
func (st Step) Clone() Step {
	if st.Fault != nil {
		f := *st.Fault
		st.Fault = &f
	}
	st.Double = append([]DoubleFault(nil), st.Double...)
	return st
}
