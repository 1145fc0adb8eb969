package seconds

import (
	"math"
	"strings"
	"testing"
)

// TestCheckRefusesWhatWouldRoundToNoDeadline: every value Check accepts becomes a Duration of at least a
// millisecond; the values below the floor (down to the smallest float) are refused, naming the floor.
func TestCheckRefusesWhatWouldRoundToNoDeadline(t *testing.T) {
	for _, v := range []float64{1e-12, 1e-300, math.SmallestNonzeroFloat64, 0.0009999, 1e-9} {
		err := Check(v)
		if err == nil || !strings.Contains(err.Error(), "1 ms") {
			t.Errorf("Check(%g) = %v, want a refusal naming the 1 ms floor", v, err)
		}
	}
	for _, v := range []float64{Min, 0.03, 5, Max} {
		if err := Check(v); err != nil {
			t.Errorf("Check(%g) = %v", v, err)
		}
		if d := Duration(v); d.Seconds() < Min || d <= 0 {
			t.Errorf("Duration(%g) = %v", v, d)
		}
	}
	for _, v := range []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, -1, Max + 1} {
		if Check(v) == nil {
			t.Errorf("Check(%g) accepted", v)
		}
	}
}
