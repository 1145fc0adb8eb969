package conformance

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/astrabox-dev/astrabox/internal/report"
	"github.com/astrabox-dev/astrabox/internal/simulate"
	"github.com/astrabox-dev/astrabox/internal/testutil"
)

// recorded reads a fixture's recorded evidence (testdata/evidence/<kind>-<name>.json.gz, fixture
// "broken/ID", "correct/NAME" or "examples/NAME"), so that a test can assert over what the fixture's live run collected (its
// histories, its load info) or replay its verdict without starting Python. The recording is the live run's:
// TestFixtures and TestRealClientFixtures (the long lane) run every fixture live and fail when its recording
// is stale, and checktest's TestReplayedVerdicts holds every replayed verdict to expect.json under -short.
func recorded(t *testing.T, fixture string) *Recording {
	t.Helper()
	path := filepath.Join("..", "..", "testdata", "evidence", strings.ReplaceAll(fixture, "/", "-")+".json.gz")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("no recorded evidence of %s: %v", fixture, err)
	}
	rec, err := DecodeRecording(data)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if rec.Evidence == nil {
		t.Fatalf("%s holds no evidence", path)
	}
	return rec
}

// fixtureDir is the directory of the fixture a recording is named by: examples/providers/NAME for
// "examples/NAME", testdata/providers/KIND/NAME otherwise (see recordedName).
func fixtureDir(fixture string) string {
	if name, ok := strings.CutPrefix(fixture, "examples/"); ok {
		return filepath.Join("..", "..", "examples", "providers", name)
	}
	return filepath.Join("..", "..", "testdata", "providers", fixture)
}

// judgedRecording replays a fixture's recording through today's judge (Recording.Replay): its results and
// the histories they were decided over. Paths in them are the recording's, under RecordingRoot.
func judgedRecording(t *testing.T, fixture string) ([]report.Result, []*simulate.History) {
	t.Helper()
	rec := recorded(t, fixture)
	results, err := rec.Replay()
	if err != nil {
		t.Fatal(err)
	}
	return results, rec.Evidence.Histories
}

// judged is a fixture's verdict with the evidence (and its histories) it was decided over, and the repository
// root as its paths spell it (RecordingRoot in a recording, the checkout's absolute path in a live run).
type judged struct {
	results []report.Result
	ev      *Evidence
	hists   []*simulate.History
	root    string
}

// path is the repository file at rel (a slash path from the repository root) as the histories spell it.
func (j judged) path(rel string) string {
	return j.root + "/" + rel
}

// recordedThenLive runs assert over a fixture's recorded run ("recorded", no Python, in every lane) and over
// a live run of it ("live": `make test` when sample is set, else only the long lane, as TestFixtures is).
// The recording is what a live run collected, held to one by TestFixtures in the long lane; the live sample
// keeps the path from Python to the assertion exercised in `make test`.
func recordedThenLive(t *testing.T, fixture string, sample bool, assert func(t *testing.T, j judged)) {
	t.Helper()
	t.Run("recorded", func(t *testing.T) {
		rec := recorded(t, fixture)
		results, err := rec.Replay()
		if err != nil {
			t.Fatal(err)
		}
		assert(t, judged{results: results, ev: rec.Evidence, hists: rec.Evidence.Histories, root: RecordingRoot})
	})
	t.Run("live", func(t *testing.T) {
		if testing.Short() {
			t.Skip("starts Python")
		}
		if !sample {
			testutil.LongLane(t, "the fixture live; its recording is judged in every lane")
		}
		root, err := filepath.Abs(filepath.Join("..", ".."))
		if err != nil {
			t.Fatal(err)
		}
		c := collectSuite(t, fixtureDir(fixture))
		assert(t, judged{results: mustDecide(t, c.ev, c.target, 1, c.opts).Results, ev: c.ev, hists: c.ev.Histories, root: root})
	})
}
