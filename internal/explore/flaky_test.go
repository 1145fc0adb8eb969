package explore

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/astrabox-dev/astrabox/internal/simulate"
)

// scripted is a Judge whose verdicts come from a script: the n-th judged run fails the check when fails[n].
type scripted struct {
	fails []bool
	n     int
}

func (s *scripted) judge(_ context.Context, sc *simulate.Scenario) ([]string, map[string]string, []byte, error) {
	fail := s.n < len(s.fails) && s.fails[s.n]
	s.n++
	if fail {
		return []string{"TURN-IDEMPOTENT"}, map[string]string{"TURN-IDEMPOTENT": "differs"}, []byte(sc.Name), nil
	}
	return nil, map[string]string{}, []byte(sc.Name), nil
}

func TestSettleTellsFlakyFromFailing(t *testing.T) {
	sc := Generate(3, 1)
	cases := []struct {
		name      string
		fails     []bool
		flaky     bool
		differMsg string
	}{
		{"original does not fail again", []bool{false}, true, "did not fail TURN-IDEMPOTENT when replayed"},
		{"shrunk replay passes", nil, true, "replay 1 of the shrunk scenario"},
		{"fails every time", allTrue(400), false, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			j := &scripted{fails: c.fails}
			budget := 5
			if c.name == "shrunk replay passes" {
				// No shrinking: the original fails again, then its first replay passes.
				j.fails, budget = []bool{true, false}, 0
			}
			dir := t.TempDir()
			fl, err := settle(context.Background(), j.judge, sc, 1, "TURN-IDEMPOTENT", "differs", Options{FailuresDir: dir, ShrinkBudget: budget}, dir)
			if err != nil {
				t.Fatal(err)
			}
			if fl.Flaky != c.flaky {
				t.Fatalf("flaky=%v, want %v (%s)", fl.Flaky, c.flaky, fl.Differed)
			}
			if c.flaky && !strings.Contains(fl.Differed, c.differMsg) {
				t.Fatalf("differed %q does not say %q", fl.Differed, c.differMsg)
			}
			data, err := os.ReadFile(fl.File)
			if err != nil {
				t.Fatal(err)
			}
			if c.flaky != strings.Contains(string(data), "# FLAKY:") {
				t.Fatalf("saved file does not say whether it is flaky:\n%s", data)
			}
		})
	}
}

func allTrue(n int) []bool {
	out := make([]bool, n)
	for i := range out {
		out[i] = true
	}
	return out
}
