package conformance

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// recorded reads a fixture's recorded evidence (testdata/evidence/<kind>-<name>.json.gz, fixture
// "broken/ID" or "correct/NAME"), so that a test can assert over what the fixture's live run collected (its
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
