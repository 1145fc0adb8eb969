package checktest

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/astrabox-dev/astrabox/internal/conformance"
	"github.com/astrabox-dev/astrabox/internal/report"
)

const root = "../../.."

// unrecorded lists the fixtures without recorded evidence, each with why. A fixture here is proven only by
// TestFixtures (or TestRealClientFixtures) in the long lane.
var unrecorded = map[string]string{}

// noKeptRecording lists the checks that no recording shows kept (passed), each with why.
var noKeptRecording = map[string]string{}

// noFailingRecording lists the checks that no recording shows failing, each with why.
var noFailingRecording = map[string]string{}

// replay is one fixture's recording and its replayed verdict, or why it could not be read.
type replay struct {
	rec     *conformance.Recording
	results []report.Result
	err     error
}

// replayed is every recorded fixture's replay, by fixture, made once (in parallel, one worker per CPU) for
// the tests of this package.
var replayed = sync.OnceValues(func() (map[string]*replay, error) {
	fixtures, err := Fixtures(root)
	if err != nil {
		return nil, err
	}
	out := map[string]*replay{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	for _, fx := range fixtures {
		if _, ok := unrecorded[fx.Name]; ok {
			continue
		}
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			r := &replay{}
			if r.rec, r.err = Load(fx.Recording); r.err == nil {
				r.results, r.err = r.rec.Replay()
			}
			mu.Lock()
			out[fx.Name] = r
			mu.Unlock()
		})
	}
	wg.Wait()
	return out, nil
})

// TestReplayedVerdicts replays every fixture's recorded evidence and holds the verdict to the fixture's
// expect.json and to the live run's recorded verdict, check by check. A fixture without a recording fails
// unless unrecorded says why.
func TestReplayedVerdicts(t *testing.T) {
	fixtures, err := Fixtures(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(fixtures) == 0 {
		t.Fatal("no fixture found under testdata/providers")
	}
	all, err := replayed()
	if err != nil {
		t.Fatal(err)
	}
	for _, fx := range fixtures {
		t.Run(fx.Name, func(t *testing.T) {
			exp, err := ReadExpectation(fx.Dir)
			if err != nil {
				t.Fatal(err)
			}
			if why, ok := unrecorded[fx.Name]; ok {
				if _, err := os.Stat(fx.Recording); err == nil {
					t.Errorf("%s has a recording but unrecorded says %q: drop the entry", fx.Name, why)
				}
				t.Skipf("not recorded: %s", why)
			}
			r := all[fx.Name]
			if r.err != nil {
				t.Fatalf("%s: %v", fx.Name, r.err)
			}
			rec, results := r.rec, r.results
			if rec.Fixture != fx.Name {
				t.Fatalf("%s holds the evidence of %s", fx.Recording, rec.Fixture)
			}
			for _, d := range Faithful(rec, results) {
				t.Errorf("replay differs from the recorded run: %s", d)
			}
			for _, d := range Judge(exp, results) {
				t.Errorf("%s: %s", filepath.Join("testdata/providers", fx.Name, "expect.json"), d)
			}
		})
	}
}

// TestNoStrayRecordings fails on a recording whose fixture is gone and on a stale entry of the tables here.
func TestNoStrayRecordings(t *testing.T) {
	fixtures, err := Fixtures(root)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	names := map[string]bool{}
	for _, fx := range fixtures {
		want[filepath.Base(fx.Recording)] = true
		names[fx.Name] = true
	}
	files, _ := filepath.Glob(filepath.Join(root, "testdata", "evidence", "*"))
	for _, f := range files {
		if !want[filepath.Base(f)] {
			t.Errorf("%s records no fixture of testdata/providers: delete it", f)
		}
	}
	for name, why := range unrecorded {
		if !names[name] {
			t.Errorf("unrecorded names %s, which is not a fixture", name)
		}
		if why == "" {
			t.Errorf("unrecorded[%s] gives no reason", name)
		}
	}
	for _, table := range []map[string]string{noKeptRecording, noFailingRecording} {
		for id, why := range table {
			if _, ok := conformance.Lookup(id); !ok {
				t.Errorf("%s is not a check", id)
			}
			if why == "" {
				t.Errorf("%s is listed without a reason", id)
			}
		}
	}
}

// TestEveryCheckIsProvenByRecordings holds the recordings to the check table: every check fails in at least
// one recording's replay and is kept (passed) in at least one, unless noFailingRecording or noKeptRecording
// says why.
func TestEveryCheckIsProvenByRecordings(t *testing.T) {
	all, err := replayed()
	if err != nil {
		t.Fatal(err)
	}
	failing, kept := map[string][]string{}, map[string][]string{}
	for name, rp := range all {
		for _, r := range rp.results {
			switch r.Status {
			case report.StatusFailed:
				failing[r.Check] = append(failing[r.Check], name)
			case report.StatusPassed:
				kept[r.Check] = append(kept[r.Check], name)
			}
		}
	}
	for _, c := range conformance.Checks() {
		for _, side := range []struct {
			what   string
			by     map[string][]string
			exempt map[string]string
			table  string
		}{{"failing", failing, noFailingRecording, "noFailingRecording"}, {"kept", kept, noKeptRecording, "noKeptRecording"}} {
			_, exempt := side.exempt[c.ID]
			switch {
			case len(side.by[c.ID]) == 0 && !exempt:
				t.Errorf("check %s: no recording shows it %s; record a fixture that does (%s), or say why in %s", c.ID, side.what, RecordCommand, side.table)
			case len(side.by[c.ID]) > 0 && exempt:
				slices.Sort(side.by[c.ID])
				t.Errorf("check %s is in %s but %s show it %s; drop the entry", c.ID, side.table, strings.Join(side.by[c.ID], ", "), side.what)
			}
		}
	}
}
