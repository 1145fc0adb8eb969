package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/astrabox-dev/astrabox/internal/coverage"
	"github.com/astrabox-dev/astrabox/internal/term"
)

// sampleCoverage is a profile over one file: prepare_turn implemented at line 6, lines 8-9 never ran after
// the test on line 7, whose fall-through was never taken.
func sampleCoverage(dir string) *Coverage {
	path := dir + "/src/p.py"
	return &Coverage{Mode: coverage.ModeMonitoring, BranchesMeasured: true,
		Files: []coverage.File{{Path: path, Lines: []int{1, 6, 7, 8, 9, 10}, Reached: []int{1, 6, 7, 10},
			Branches: []coverage.Branch{{Line: 7, Taken: [2]bool{false, true}}}}},
		Callbacks: []coverage.Callback{{Name: "prepare_turn", Files: []coverage.Reach{{Path: path, Lines: []int{7, 10}, Branches: []int{1}}},
			Implementation:  &coverage.Span{Path: path, Function: "P.prepare_turn", First: 6, Last: 10, Lines: 4, Reached: 2},
			Unreached:       []coverage.Range{{First: 8, Last: 9, After: "if context.refresh:", AfterLine: 7}},
			UntakenBranches: []coverage.BranchDirection{{Line: 7, Direction: coverage.DirFallThrough}}}},
		Checks: []coverage.CheckCallbacks{{Check: "TURN-A", Callbacks: []string{"prepare_turn"}}, {Check: "TURN-B", Callbacks: []string{"prepare_turn"}}}}
}

func TestTextCoverageSection(t *testing.T) {
	r := shard(1, Result{Check: "TURN-A", Area: "turn", Status: StatusPassed}, Result{Check: "TURN-B", Area: "turn", Status: StatusFailed, Message: "broke"},
		Result{Check: "GEN-X", Area: "general", Status: StatusPassed})
	r.Provider.Project = "/proj"
	r.Coverage = sampleCoverage("/proj")
	out := render(t, "text", term.NewStyles(false), 100, r)
	i := strings.Index(out, "Provider coverage")
	if i < 0 || i < strings.Index(out, "Summary") {
		t.Fatalf("the coverage section is not at the end:\n%s", out)
	}
	tail := out[i:]
	for _, want := range []string{"4 of 6 lines (66%), 1 of 2 branch directions (50%)", "src/p.py 4/6 lines, 1/2 branches",
		"prepare_turn: ran 2 lines, 1 branch direction; P.prepare_turn at src/p.py:6: 2/4 lines",
		"prepare_turn: lines 8-9 (after `if context.refresh:`, line 7) never ran", "prepare_turn: 1 branch direction never taken (line 7)"} {
		if !strings.Contains(tail, want) {
			t.Errorf("coverage section lacks %q:\n%s", want, tail)
		}
	}
	head := out[:i]
	// Next to the verdicts: under the failed TURN-B and under the passed TURN-A, never under GEN-X.
	if n := strings.Count(head, "coverage: prepare_turn has 1 branch direction no scenario took (line 7)"); n != 2 {
		t.Errorf("%d notes next to verdicts, want 2:\n%s", n, head)
	}
	gen := head[strings.Index(head, "general"):]
	if strings.Contains(gen[:strings.Index(gen, "Summary")], "coverage:") {
		t.Errorf("a note under a check that judges no callback:\n%s", gen)
	}
	// Without coverage, nothing of it shows.
	r.Coverage = nil
	if out := render(t, "text", term.NewStyles(false), 100, r); strings.Contains(out, "coverage") {
		t.Errorf("coverage shown without any:\n%s", out)
	}
}

func TestTextCoverageWithoutBranches(t *testing.T) {
	r := shard(1, Result{Check: "TURN-A", Area: "turn", Status: StatusPassed})
	c := sampleCoverage("/proj")
	c.Mode, c.BranchesMeasured = coverage.ModeTrace, false
	r.Coverage = c
	out := render(t, "text", term.NewStyles(false), 100, r)
	if !strings.Contains(out, "branches not measured (Python 3.12+ measures them)") || strings.Contains(out, "no scenario took") {
		t.Errorf("trace-mode coverage:\n%s", out)
	}
}

func TestJSONAndMergeCarryCoverage(t *testing.T) {
	a := shard(1, Result{Check: "TURN-A", Area: "turn", Status: StatusPassed})
	a.Coverage = sampleCoverage("/proj")
	var buf bytes.Buffer
	if err := (&JSON{}).Render(&buf, a); err != nil {
		t.Fatal(err)
	}
	back, err := ReadJSON(&buf)
	if err != nil || back.Coverage == nil || back.Coverage.Callbacks[0].Unreached[0].After != "if context.refresh:" {
		t.Fatalf("json round trip: %v %+v", err, back.Coverage)
	}
	b := shard(1, Result{Check: "TURN-A", Area: "turn", Status: StatusPassed})
	b.Coverage = sampleCoverage("/proj")
	b.Coverage.Files[0].Reached = []int{1, 6, 7, 8, 9}
	b.Coverage.Files[0].Branches[0].Taken = [2]bool{true, false}
	m, err := Merge(a, b, shard(1))
	if err != nil {
		t.Fatal(err)
	}
	if tot := m.Coverage.Totals(); tot.Reached != 6 || tot.BranchesTaken != 2 {
		t.Errorf("merged totals %+v", tot)
	}
	if m, _ := Merge(shard(1), shard(1)); m.Coverage != nil {
		t.Errorf("merged coverage out of none: %+v", m.Coverage)
	}
}
