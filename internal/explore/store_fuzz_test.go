package explore

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/astrabox-dev/astrabox/internal/simulate"
)

// FuzzLastFailed feeds any bytes to the failure store as its last-failed.json. The decoder never panics;
// a record it accepts names only check IDs and scenario files of the store, and encodes back to a record
// it accepts the same; LastFailed over it never reads a file outside the store and never quotes one.
func FuzzLastFailed(f *testing.F) {
	f.Add([]byte(`{"written":"2024-01-01T00:00:00Z","failures":[{"check":"GEN-SETTLES","file":"gen-settles-7.yaml"}]}`))
	f.Add([]byte(`{"failures":[{"check":"GEN-SETTLES","file":"/etc/shadow"}]}`))
	f.Add([]byte(`{"failures":[{"check":"LEAK-LOG","file":"../../outside/leak-log--3.yaml"}]}`))
	f.Add([]byte(`{"failures":[]}{"failures":[]}`))
	f.Add([]byte(`{"failures":[{"check":"A","file":"a-1.yaml","extra":1}]}`))
	f.Add([]byte(`{"failures":null,"written":"x"}`))
	dir := filepath.Join(f.TempDir(), "failures")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		f.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "gen-settles-7.yaml"), []byte(storeScenario), 0o644); err != nil {
		f.Fatal(err)
	}
	outside := filepath.Join(filepath.Dir(dir), "leak-log-1.yaml")
	if err := os.WriteFile(outside, []byte("name: OUTSIDE\nsteps: [{op: nope}]\n"), 0o644); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 64<<10 {
			return
		}
		lf, err := decodeLastFailed(data)
		if err == nil {
			for _, fl := range lf.Failures {
				if !checkID.MatchString(fl.Check) || !savedName.MatchString(filepath.Base(fl.File)) {
					t.Fatalf("accepted %+v", fl)
				}
			}
			again, _ := json.Marshal(lf)
			lf2, err := decodeLastFailed(again)
			if err != nil {
				t.Fatalf("its own encoding is refused: %v\n%s", err, again)
			}
			b, _ := json.Marshal(lf2)
			if !bytes.Equal(again, b) {
				t.Fatalf("round trip changed the record:\n%s\n%s", again, b)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, lastFailedFile), data, 0o644); err != nil {
			t.Fatal(err)
		}
		scs, _, err := LastFailed(dir)
		if err != nil && strings.Contains(err.Error(), "OUTSIDE") {
			t.Fatalf("the error quotes a file outside the store: %v", err)
		}
		for _, sc := range scs {
			if sc.Name != "saved" {
				t.Fatalf("loaded a scenario that is not the store's: %q", sc.Name)
			}
		}
	})
}

// FuzzSavedScenario saves a parsed scenario as a failure, with any failure message and flakiness text in
// its header comments, and reads it back as --last-failed does. The saved file always parses to the same
// scenario: nothing in a message (a line break of any kind) escapes the comments into the YAML.
func FuzzSavedScenario(f *testing.F) {
	f.Add([]byte(storeScenario), "GEN-SETTLES", "prepare_session never settled", "", int64(7))
	f.Add([]byte("name: y\nreplicas: 3\ndeadlines: {turn: 2.5}\nsteps:\n  - {op: prewarm, agent: agent-1, boxes: 2}\n  - {op: advance, seconds: 60}\n"), "LEAK-LOG", "a\nsteps: []", "b\r\nname: z", int64(-3))
	f.Add([]byte(storeScenario), "TURN-WITHIN-DEADLINE", "x\rsteps: []\r", "\u2028name: evil\u0085", int64(0))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte, check, message, differed string, seed int64) {
		if len(data) > 16<<10 || !checkID.MatchString(check) {
			return
		}
		sc, err := simulate.ParseScenario("in.yaml", data)
		if err != nil {
			return
		}
		sc.Seed = seed
		want, err := sc.YAML()
		if err != nil {
			t.Fatal(err)
		}
		file, err := save(dir, "", check, sc, &Failure{Index: 1, Steps: len(sc.Steps), Message: message, Flaky: differed != "", Differed: differed})
		if err != nil {
			t.Fatal(err)
		}
		if !savedName.MatchString(filepath.Base(file)) {
			t.Fatalf("saved as %q, a name --last-failed refuses", file)
		}
		body, err := readStoreFile(file, MaxScenarioFileSize)
		if err != nil {
			t.Fatal(err)
		}
		back, err := simulate.ParseScenario(file, body)
		if err != nil {
			t.Fatalf("the saved failure does not parse: %v\n%s", err, body)
		}
		got, _ := back.YAML()
		if !bytes.Equal(got, want) {
			t.Fatalf("the saved failure reads back differently:\n%s\nwant:\n%s", got, want)
		}
	})
}
