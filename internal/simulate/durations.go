package simulate

import (
	"fmt"

	"github.com/astrabox-dev/astrabox/internal/seconds"
)

// MaxSeconds is the longest duration, in seconds, that any deadline, lease, delay, fault time or clock
// advance may be: 30 days (seconds.Max). docs/scenarios.md and docs/configuration.md document the bound.
const MaxSeconds = seconds.Max

// CheckSeconds is the one validation of every duration in settings and scenarios (seconds.Check): a finite
// number of seconds from 1 ms to MaxSeconds. The error says what is wrong with the value, for the caller to
// prefix with where it was written.
func CheckSeconds(v float64) error { return seconds.Check(v) }

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
// value is an error, never silently replaced by the default. The key is the refused deadline's
// ("deadlines.session"), for the line of the error.
func (d *Deadlines) check() (string, error) {
	for _, f := range []struct {
		name string
		v    float64
	}{{"plan", d.Plan}, {"synchronize", d.Synchronize}, {"recover", d.Recover}, {"session", d.Session},
		{"turn", d.Turn}, {"user_action", d.UserAction}, {"operation_lease", d.OperationLease}} {
		if err := checkSet("deadlines."+f.name, f.v); err != nil {
			return "deadlines." + f.name, err
		}
	}
	return "", nil
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
