package coverage

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/astrabox-dev/astrabox/internal/harness"
)

// source is a small provider file; report is what two replicas' harnesses would have reported for it.
const source = `"""doc"""
import os


class P:
    def prepare_turn(self, context):
        if context.refresh:
            x = 1
            return x
        return None

    def plan(self, config):
        return 1
`

func writeSource(t *testing.T) (root, path string) {
	t.Helper()
	root = t.TempDir()
	path = filepath.Join(root, "src", "pkg", "provider.py")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(source), 0o644); err != nil {
		t.Fatal(err)
	}
	return root, path
}

func staticReport(path string) *harness.CoverageReport {
	return &harness.CoverageReport{Mode: harness.CoverageMonitoring, Branches: true,
		Files: map[string]harness.CoverageFile{path: {
			Lines: []int{1, 2, 5, 6, 7, 8, 9, 10, 12, 13}, Branches: []int{7},
			Functions: []harness.CoverageFunction{{Name: "P.prepare_turn", First: 6, Last: 10}, {Name: "P.plan", First: 12, Last: 13}},
		}},
		Hits: []harness.CoverageHits{{Key: "load", Lines: map[string][]int{path: {1, 2, 5, 6, 12}}}}}
}

func turn(path string, lines, dirs []int) *harness.CoverageReport {
	return &harness.CoverageReport{Mode: harness.CoverageMonitoring, Branches: true,
		Hits: []harness.CoverageHits{{Key: "prepare_turn", Lines: map[string][]int{path: lines}, Branches: map[string][]int{path: dirs}}}}
}

func TestBuilderByCallbackScenarioAndUnreached(t *testing.T) {
	_, path := writeSource(t)
	b := NewBuilder()
	b.Add("s1", "r1", staticReport(path))
	b.Add("s1", "r1", turn(path, []int{7, 10}, []int{1}))
	b.Add("s2", "r2", turn(path, []int{7, 10}, []int{1}))
	b.Implement("prepare_turn", path, 6)
	b.Implement("plan", path, 12)
	p := b.Profile()
	if p.Mode != ModeMonitoring || !p.BranchesMeasured {
		t.Errorf("mode %q branches %v", p.Mode, p.BranchesMeasured)
	}
	f := p.File(path)
	if f == nil || !reflect.DeepEqual(f.Reached, []int{1, 2, 5, 6, 7, 10, 12}) {
		t.Fatalf("file %+v", f)
	}
	if !reflect.DeepEqual(f.Branches, []Branch{{Line: 7, Taken: [2]bool{false, true}}}) {
		t.Errorf("branches %+v", f.Branches)
	}
	if tot := p.Totals(); tot != (Totals{Lines: 10, Reached: 7, Branches: 2, BranchesTaken: 1}) {
		t.Errorf("totals %+v", tot)
	}
	var names []string
	for _, cb := range p.Callbacks {
		names = append(names, cb.Name)
	}
	if !reflect.DeepEqual(names, []string{"load", "plan", "prepare_turn"}) {
		t.Errorf("callbacks %v", names)
	}
	pt := p.Callback("prepare_turn")
	if want := (&Span{Path: path, Function: "P.prepare_turn", First: 6, Last: 10, Lines: 4, Reached: 2}); !reflect.DeepEqual(pt.Implementation, want) {
		t.Errorf("span %+v", pt.Implementation)
	}
	if want := []Range{{First: 8, Last: 9, After: "if context.refresh:", AfterLine: 7}}; !reflect.DeepEqual(pt.Unreached, want) {
		t.Errorf("unreached %+v", pt.Unreached)
	}
	if want := []BranchDirection{{Line: 7, Direction: DirFallThrough}}; !reflect.DeepEqual(pt.UntakenBranches, want) {
		t.Errorf("untaken %+v", pt.UntakenBranches)
	}
	// plan was implemented but never called: its whole body is one unreached range, with no branch before it.
	if pl := p.Callback("plan"); pl == nil || !reflect.DeepEqual(pl.Unreached, []Range{{First: 13, Last: 13}}) || len(pl.Files) != 0 {
		t.Errorf("plan %+v", pl)
	}
	want := []Scenario{{Name: "s1", Lines: 7, Branches: 1, Replicas: []Count{{Replica: "r1", Lines: 7, Branches: 1}}},
		{Name: "s2", Lines: 2, Branches: 1, Replicas: []Count{{Replica: "r2", Lines: 2, Branches: 1}}}}
	if !reflect.DeepEqual(p.Scenarios, want) {
		t.Errorf("scenarios %+v", p.Scenarios)
	}
}

func TestMergeShards(t *testing.T) {
	_, path := writeSource(t)
	a := NewBuilder()
	a.Add("s1", "r1", staticReport(path))
	a.Add("s1", "r1", turn(path, []int{7, 10}, []int{1}))
	a.Implement("prepare_turn", path, 6)
	b := NewBuilder()
	b.Add("s2", "r1", staticReport(path))
	b.Add("s2", "r1", turn(path, []int{7, 8, 9}, []int{0}))
	trace := &harness.CoverageReport{Mode: harness.CoverageTrace, Notes: []string{"a note"}}
	b.Add("s2", "r1", trace)
	m := Merge(a.Profile(), nil, b.Profile())
	f := m.File(path)
	if !reflect.DeepEqual(f.Reached, []int{1, 2, 5, 6, 7, 8, 9, 10, 12}) || f.Branches[0].Taken != [2]bool{true, true} {
		t.Errorf("merged file %+v", f)
	}
	if m.Mode != ModeMixed || m.BranchesMeasured {
		t.Errorf("merged mode %q %v", m.Mode, m.BranchesMeasured)
	}
	pt := m.Callback("prepare_turn")
	if pt.Implementation == nil || len(pt.Unreached) != 0 || len(pt.UntakenBranches) != 0 {
		t.Errorf("merged prepare_turn %+v", pt)
	}
	if len(m.Scenarios) != 2 || m.Scenarios[0].Name != "s1" || m.Scenarios[1].Name != "s2" || !reflect.DeepEqual(m.Notes, []string{"a note"}) {
		t.Errorf("merged scenarios %+v notes %v", m.Scenarios, m.Notes)
	}
	if Merge(nil, nil) != nil {
		t.Error("merge of nothing is not nil")
	}
}

func TestUnreachedRanges(t *testing.T) {
	lines := []int{3, 4, 7, 9, 12, 13}
	got := unreachedRanges(lines, setOf([]int{7, 13}))
	want := []Range{{First: 3, Last: 4}, {First: 9, Last: 12}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v", got)
	}
	if r := unreachedRanges(lines, setOf(lines)); r != nil {
		t.Errorf("all reached: %+v", r)
	}
}
