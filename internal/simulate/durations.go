package simulate

import (
	"fmt"
	"math"
)

// MaxSeconds is the longest duration, in seconds, that any deadline, lease, delay, fault time or clock
// advance may be: 30 days. Longer values (1e300, say) would overflow the kit's durations and turn deadlines
// off; docs/scenarios.md and docs/configuration.md document the bound.
const MaxSeconds = 30 * 24 * 3600

// CheckSeconds is the one validation of every duration in settings and scenarios: a finite, positive number of
// seconds, at most MaxSeconds. The error says what is wrong with the value, for the caller to prefix with
// where it was written.
func CheckSeconds(v float64) error {
	switch {
	case math.IsNaN(v):
		return fmt.Errorf("is nan; write a number of seconds such as 5")
	case math.IsInf(v, 0):
		return fmt.Errorf("is infinite; write a number of seconds, at most %d (30 days)", MaxSeconds)
	case v <= 0:
		return fmt.Errorf("is %g; it must be a positive number of seconds such as 5", v)
	case v > MaxSeconds:
		return fmt.Errorf("is %g seconds, longer than the maximum of %d (30 days)", v, MaxSeconds)
	}
	return nil
}

// checkSet checks a duration that may be absent: 0 (an omitted field) is left for the default to fill.
func checkSet(name string, v float64) error {
	if v == 0 {
		return nil
	}
	if err := CheckSeconds(v); err != nil {
		return fmt.Errorf("`%s` %w", name, err)
	}
	return nil
}

// check validates every deadline the scenario sets, before defaults fill the rest: a negative or non-finite
// value is an error, never silently replaced by the default.
func (d *Deadlines) check() error {
	for _, f := range []struct {
		name string
		v    float64
	}{{"plan", d.Plan}, {"synchronize", d.Synchronize}, {"recover", d.Recover}, {"session", d.Session},
		{"turn", d.Turn}, {"user_action", d.UserAction}, {"operation_lease", d.OperationLease}} {
		if err := checkSet("deadlines."+f.name, f.v); err != nil {
			return err
		}
	}
	return nil
}

// checkDurations validates every duration a step sets: advance seconds, live_for, a fault's time and each
// double fault's delay.
func (st *Step) checkDurations() error {
	if err := checkSet("seconds", st.Seconds); err != nil {
		return err
	}
	if err := checkSet("live_for", st.LiveFor.Seconds); err != nil {
		return err
	}
	if st.Fault != nil {
		if err := checkSet("fault.after", st.Fault.After); err != nil {
			return err
		}
	}
	for _, d := range st.Double {
		if err := checkSet("double.delay", d.Delay); err != nil {
			return err
		}
	}
	return nil
}

// MaxClockSeconds bounds the host clock a scenario can reach (the sum of its advances): 10 years, far below
// where the clock's durations would overflow.
const MaxClockSeconds = 10 * 365 * 24 * 3600

// checkClock tells whether the steps' advances together stay within MaxClockSeconds, and if not, at which
// step they pass it.
func checkClock(steps []Step) (int, error) {
	var total float64
	for i, st := range steps {
		if st.Op != OpAdvance {
			continue
		}
		total += st.Seconds
		if total > MaxClockSeconds {
			return i, fmt.Errorf("step %d (advance): the advances so far add up to %g seconds, more than the maximum of %d (10 years)", i+1, total, MaxClockSeconds)
		}
	}
	return 0, nil
}
