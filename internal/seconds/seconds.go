// Package seconds is the kit's one rule for a duration written as a number of seconds, wherever it is
// written (a deadline or the settle bound in [tool.astrabox], a scenario's deadlines, an advance, a fault's
// time or delay, a declared service's ready-timeout): a finite number from Min (1 ms) to an upper bound, and
// how such a number becomes a time.Duration. Below a nanosecond a float rounds to a zero time.Duration, which
// the kit's waits read as "no deadline"; the floor keeps every accepted value far from that.
package seconds

import (
	"fmt"
	"math"
	"time"
)

// Min is the shortest duration accepted anywhere, in seconds: one millisecond.
const Min = 0.001

// Max is the longest duration accepted by default, in seconds: 30 days. Longer values (1e300, say) would
// overflow a time.Duration and turn deadlines off.
const Max = 30 * 24 * 3600

// Check validates v as a number of seconds from Min to Max. The error says what is wrong with the value,
// for the caller to prefix with where it was written.
func Check(v float64) error {
	switch {
	case math.IsNaN(v):
		return fmt.Errorf("is nan; write a number of seconds such as 5")
	case math.IsInf(v, 0):
		return fmt.Errorf("is infinite; write a number of seconds, at most %d (30 days)", Max)
	case v <= 0:
		return fmt.Errorf("is %g; it must be a positive number of seconds such as 5", v)
	case v < Min:
		return fmt.Errorf("is %g seconds, below the shortest duration the kit accepts, %g (1 ms): a value that small would round to no deadline at all; write at least %g", v, Min, Min)
	case v > Max:
		return fmt.Errorf("is %g seconds, longer than the maximum of %d (30 days)", v, Max)
	}
	return nil
}

// Duration converts a number of seconds that passed Check to a time.Duration, rounded to the nanosecond;
// it is never zero for such a value.
func Duration(v float64) time.Duration {
	return time.Duration(math.Round(v * float64(time.Second)))
}
