package conformance

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/astrabox-dev/astrabox/internal/report"
	"github.com/astrabox-dev/astrabox/internal/testutil"
)

// reproRuns is how many times each fixture runs in the reproducibility test.
const reproRuns = 10

// reproFixtures are the fixtures the long lane (`make long`) proves reproducible: work that outlives its callback (an
// executor job, a timer that prints a secret, a thread writing over a raw socket while the next callback
// runs, attributed by its connection; one written on a kept-alive connection, attributed by the send that
// carried it) and string-hash order across replicas, the
// verdicts that used to depend on timing luck or on which process served a scenario. `make repro`
// (ASTRABOX_REPRO=all) runs every fixture.
var reproFixtures = []string{
	"../../testdata/providers/broken/gen-no-dispatch-late-pool",
	"../../testdata/providers/broken/leak-log-late-timer",
	"../../testdata/providers/broken/gen-no-dispatch-late-socket",
	"../../testdata/providers/broken/gen-no-dispatch-kept-alive",
}

// verdict is what must repeat: each check's status and clauses, in table order.
func verdict(rep *report.Report) string {
	lines := make([]string, 0, len(rep.Results))
	for _, r := range rep.Results {
		clauses := append([]string(nil), r.Clauses...)
		sort.Strings(clauses)
		lines = append(lines, fmt.Sprintf("%s %s [%s]", r.Check, r.Status, strings.Join(clauses, " ")))
	}
	return strings.Join(lines, "\n")
}

// TestVerdictsRepeat runs fixtures ten times each with the same seed and requires the same status and clauses
// for every check in every run. It is in the long lane: ten runs of each fixture.
func TestVerdictsRepeat(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python, many times")
	}
	testutil.LongLane(t, "ten runs of each fixture")
	dirs := reproFixtures
	if os.Getenv("ASTRABOX_REPRO") == "all" {
		dirs = fixtureDirs(t)
	}
	for _, dir := range dirs {
		dir := dir
		name := filepath.Base(filepath.Dir(dir)) + "/" + filepath.Base(dir)
		t.Run(name, func(t *testing.T) {
			if _, err := os.Stat(filepath.Join(dir, "expect.json")); err != nil && !strings.Contains(dir, "examples") {
				t.Skip("not a fixture")
			}
			var first string
			for i := 0; i < reproRuns; i++ {
				rep, err := runProject(t, dir)
				got := ""
				if err != nil {
					got = "undecided: " + err.Error()
				} else {
					got = verdict(rep)
				}
				if i == 0 {
					first = got
					continue
				}
				if got != first {
					t.Fatalf("run %d of %d gave another verdict than run 1:\n%s", i+1, reproRuns, diffLines(first, got))
				}
			}
		})
	}
}

// diffLines shows the lines of b that differ from a.
func diffLines(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	var out []string
	for i := 0; i < max(len(al), len(bl)); i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			out = append(out, "- "+x, "+ "+y)
		}
	}
	return strings.Join(out, "\n")
}
