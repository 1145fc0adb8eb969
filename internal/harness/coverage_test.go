package harness

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"
)

// covFile is the fixture file whose reached lines the tests know exactly.
const covFile = "src/cov_provider/provider.py"

// loadCovered starts the harness with python py and loads the coverage fixture with coverage on.
func loadCovered(t *testing.T, py string, opts *CoverageOptions) (*Process, string) {
	t.Helper()
	return loadCoveredTarget(t, py, "cov_provider.provider:Provider", opts)
}

// loadCoveredTarget is loadCovered with another provider of the fixture.
func loadCoveredTarget(t *testing.T, py, target string, opts *CoverageOptions) (*Process, string) {
	t.Helper()
	dir := fixtureDir(t, "coverage")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := Start(ctx, Options{Python: py, ProjectDir: dir, Limits: testLimits()})
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() { p.Kill() })
	r, err := p.Load(ctx, LoadArgs{Target: target, Paths: []string{filepath.Join(dir, "src")}, ProjectRoot: dir, Coverage: opts})
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	if _, err := r.LoadInfo(); err != nil {
		t.Fatalf("load: %v\n%s", err, r.Stderr.String())
	}
	if r.Coverage != nil {
		t.Errorf("the load reply carries coverage; only callback replies should: %+v", r.Coverage)
	}
	return p, filepath.Join(dir, covFile)
}

// hitsOf returns the lines and branch directions a reply reports for key in file.
func hitsOf(r *Reply, key, file string) (lines, branches []int) {
	if r.Coverage == nil {
		return nil, nil
	}
	for _, h := range r.Coverage.Hits {
		if h.Key == key {
			lines, branches = h.Lines[file], h.Branches[file]
		}
	}
	return lines, branches
}

// branchLines maps a file's branch directions to "line: taken directions" (2 per branch point).
func branchLines(f CoverageFile, dirs []int) map[int][]int {
	out := map[int][]int{}
	for _, d := range dirs {
		out[f.Branches[d/2]] = append(out[f.Branches[d/2]], d%2)
	}
	for _, v := range out {
		sort.Ints(v)
	}
	return out
}

// TestCoverageExactLines checks, on every CPython 3.9-3.13 installed under pyenv, that the harness reports
// exactly the lines the fixture ran, attributed to load and to each callback, again on each call of the same
// callback, and (3.12+) exactly the branch directions taken.
func TestCoverageExactLines(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python")
	}
	for _, v := range []string{"3.9.18", "3.10.13", "3.11.7", "3.12.1", "3.13.0"} {
		t.Run(v, func(t *testing.T) {
			py := filepath.Join("/root/.pyenv/versions", v, "bin", "python3")
			if _, err := os.Stat(py); err != nil {
				t.Skipf("%s not installed", py)
			}
			p, file := loadCovered(t, py, &CoverageOptions{Enabled: true})
			monitoring := v == "3.12.1" || v == "3.13.0"
			r, err := call(t, p, "plan", map[string]any{"config": map[string]any{"flag": false, "a": 1}}, 10*time.Second)
			if err != nil || !r.OK || r.Coverage == nil {
				t.Fatalf("plan: %v %+v", err, r)
			}
			want := map[bool]string{true: CoverageMonitoring, false: CoverageTrace}[monitoring]
			if r.Coverage.Mode != want || r.Coverage.Branches != monitoring {
				t.Errorf("mode %q branches %v, want %q %v", r.Coverage.Mode, r.Coverage.Branches, want, monitoring)
			}
			static, ok := r.Coverage.Files[file]
			if !ok {
				t.Fatalf("no static facts for %s in %v", file, r.Coverage.Files)
			}
			if wantExec := []int{1, 3, 6, 7, 8, 9, 12, 13, 16, 17, 19, 20, 21, 22, 23, 24, 26, 27, 28, 29}; !reflect.DeepEqual(static.Lines, wantExec) {
				t.Errorf("executable lines %v, want %v", static.Lines, wantExec)
			}
			if len(r.Coverage.Files) != 2 { // provider.py and the empty __init__.py; never the SDK or stdlib
				t.Errorf("measured files %v", r.Coverage.Files)
			}
			if got, _ := hitsOf(r, "load", file); !reflect.DeepEqual(got, []int{1, 3, 6, 12, 16, 17, 19, 26}) {
				t.Errorf("load ran %v", got)
			}
			lines, dirs := hitsOf(r, "plan", file)
			if !reflect.DeepEqual(lines, []int{7, 9, 20, 21, 22, 24}) {
				t.Errorf("plan ran %v", lines)
			}
			if monitoring {
				// line 7 `if flag` jumped over its body; the loop on 21 ran and ended; `if key == "skip"`
				// (compiled as a jump to the loop's head when true) fell through both times; line 27 is in
				// prepare_turn, not run yet.
				got := branchLines(static, dirs)
				if !reflect.DeepEqual(got, map[int][]int{7: {1}, 21: {0, 1}, 22: {0}}) {
					t.Errorf("plan took branches %v (points at lines %v)", got, static.Branches)
				}
				if !reflect.DeepEqual(static.Branches, []int{7, 21, 22, 27}) {
					t.Errorf("branch points at lines %v", static.Branches)
				}
			} else if len(dirs) != 0 || len(static.Branches) != 0 {
				t.Errorf("branches measured without sys.monitoring: %v %v", dirs, static.Branches)
			}
			// The same callback again: it reports its lines again (each call carries what it ran), and the
			// static facts are not sent twice.
			r, err = call(t, p, "plan", map[string]any{"config": map[string]any{"flag": true}}, 10*time.Second)
			if err != nil || !r.OK || r.Coverage == nil {
				t.Fatalf("plan again: %v %+v", err, r)
			}
			if len(r.Coverage.Files) != 0 {
				t.Errorf("files sent again: %v", r.Coverage.Files)
			}
			if lines, _ := hitsOf(r, "plan", file); !reflect.DeepEqual(lines, []int{7, 8, 20, 21, 22, 24}) {
				t.Errorf("second plan ran %v", lines)
			}
			if lines, _ := hitsOf(r, "load", file); lines != nil {
				t.Errorf("load lines reported again: %v", lines)
			}
			r, err = call(t, p, "prepare_turn", turnArgs(t.TempDir()), 10*time.Second)
			if err != nil || !r.OK {
				t.Fatalf("turn: %v %+v", err, r)
			}
			lines, dirs = hitsOf(r, "prepare_turn", file)
			if !reflect.DeepEqual(lines, []int{27, 29}) {
				t.Errorf("prepare_turn ran %v", lines)
			}
			if monitoring && !reflect.DeepEqual(branchLines(static, dirs), map[int][]int{27: {1}}) {
				t.Errorf("prepare_turn took branches %v", branchLines(static, dirs))
			}
		})
	}
}

// TestCoverageOffAndOmit checks that coverage is off unless asked for, and that omit leaves a file out.
func TestCoverageOffAndOmit(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python")
	}
	p, _ := loadCovered(t, "python3", nil)
	r, err := call(t, p, "plan", map[string]any{"config": map[string]any{}}, 10*time.Second)
	if err != nil || !r.OK {
		t.Fatalf("plan: %v %+v", err, r)
	}
	if r.Coverage != nil {
		t.Errorf("coverage reported while off: %+v", r.Coverage)
	}
	p, file := loadCovered(t, "python3", &CoverageOptions{Enabled: true, Omit: []string{"src/*/__init__.py"}})
	r, err = call(t, p, "plan", map[string]any{"config": map[string]any{}}, 10*time.Second)
	if err != nil || !r.OK || r.Coverage == nil {
		t.Fatalf("plan: %v %+v", err, r)
	}
	if _, ok := r.Coverage.Files[file]; !ok || len(r.Coverage.Files) != 1 {
		t.Errorf("measured files %v, want only %s", r.Coverage.Files, file)
	}
}

// TestCoverageBesideProviderTool checks that a provider installing its own trace function (3.9-3.11) or
// sys.monitoring tool (3.12+) keeps it working, and that the reply says coverage met it.
func TestCoverageBesideProviderTool(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python")
	}
	for _, v := range []string{"3.11.7", "3.12.1"} {
		t.Run(v, func(t *testing.T) {
			py := filepath.Join("/root/.pyenv/versions", v, "bin", "python3")
			if _, err := os.Stat(py); err != nil {
				t.Skipf("%s not installed", py)
			}
			p, _ := loadCoveredTarget(t, py, "cov_provider.tracing:Provider", &CoverageOptions{Enabled: true})
			r, err := call(t, p, "plan", map[string]any{"config": map[string]any{}}, 10*time.Second)
			if err != nil || !r.OK || r.Coverage == nil {
				t.Fatalf("plan: %v %+v", err, r)
			}
			res, err := r.Result()
			if err != nil || string(res.Declaration) != `{"seen": true}` && string(res.Declaration) != `{"seen":true}` {
				t.Errorf("the provider's own tool did not run: %v %s", err, res.Declaration)
			}
			want := map[string]string{"3.11.7": "the provider replaced the trace function", "3.12.1": "the provider uses sys.monitoring tool id 1 (their coverage)"}[v]
			if len(r.Coverage.Notes) != 1 || !strings.HasPrefix(r.Coverage.Notes[0], want) {
				t.Errorf("notes %q, want one starting %q", r.Coverage.Notes, want)
			}
		})
	}
}
