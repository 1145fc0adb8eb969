package simulate

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBadDurationsAreRefusedAtTheirLine parses every scenario under testdata/durations: each sets a
// duration that is not finite, not positive, longer than MaxSeconds, or a clock past MaxClockSeconds (or a
// seed that is not a whole number), and must be refused at the line marked `# here` with the words of its
// `# want:` comment.
func TestBadDurationsAreRefusedAtTheirLine(t *testing.T) {
	files, _ := filepath.Glob("testdata/durations/*.yaml")
	if len(files) < 10 {
		t.Fatalf("only %d fixtures", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var want string
			line := 0
			for i, l := range strings.Split(string(data), "\n") {
				if w, ok := strings.CutPrefix(l, "# want: "); ok {
					want = w
				}
				if strings.Contains(l, "# here") {
					line = i + 1
				}
			}
			_, err = ParseScenario(f, data)
			var se *ScenarioError
			if !errors.As(err, &se) {
				t.Fatalf("accepted, or not a scenario error: %v", err)
			}
			if se.Line != line || !strings.Contains(se.Msg, want) {
				t.Errorf("got line %d %q\nwant line %d %q", se.Line, se.Msg, line, want)
			}
		})
	}
}

func TestCheckSeconds(t *testing.T) {
	for _, v := range []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, -1, MaxSeconds + 1, 1e300} {
		if CheckSeconds(v) == nil {
			t.Errorf("%g accepted", v)
		}
	}
	for _, v := range []float64{0.001, 1, 5, MaxSeconds} {
		if err := CheckSeconds(v); err != nil {
			t.Errorf("%g refused: %v", v, err)
		}
	}
}
