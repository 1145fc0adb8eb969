// Package checktest replays the recorded evidence of the fixture providers (testdata/evidence, recorded
// from testdata/providers, and from the examples of examples/providers that hold an expect.json, by
// internal/conformance's TestFixtures and TestRealClientFixtures) through the checks' judge, without Python,
// and holds each replayed verdict to the fixture's expect.json: the fast lane that proves every check's
// decision under `go test -short` (docs/architecture.md, "Recorded evidence").
package checktest

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/astrabox-dev/astrabox/internal/conformance"
	"github.com/astrabox-dev/astrabox/internal/report"
)

// RecordCommand records the evidence of every fixture again.
const RecordCommand = "ASTRABOX_UPDATE_EVIDENCE=1 go test ./internal/conformance -run 'TestFixtures|TestRealClientFixtures' -timeout 60m"

// Expectation is a fixture's expect.json: what its run must decide.
type Expectation struct {
	// Fails are exactly the checks that fail.
	Fails []string `json:"fails"`
	Warns []string `json:"warns"`
	// RequiresModule is a Python module the live run needs (the replay does not).
	RequiresModule string `json:"requires_module"`
	Undecided      bool   `json:"undecided"`
	Note           string `json:"note"`
	// NotExercised are checks that end not_exercised, with why (NotExercisedWhy).
	NotExercised    []string `json:"not_exercised"`
	NotExercisedWhy string   `json:"not_exercised_why"`
	// FailMessages maps failing checks to a text their message must hold.
	FailMessages map[string]string `json:"fail_messages"`
}

// Fixture is one fixture provider and the file its evidence is recorded in.
type Fixture struct {
	// Name is "broken/ID", "correct/NAME" or "examples/NAME".
	Name string
	// Dir is the fixture's directory, Recording the file of its recorded evidence.
	Dir, Recording string
}

// Fixtures lists the fixtures under root/testdata/providers/{broken,correct} and the examples under
// root/examples/providers that hold an expect.json (named "examples/NAME"), sorted by name.
func Fixtures(root string) ([]Fixture, error) {
	var out []Fixture
	for _, kind := range []string{"broken", "correct", "examples"} {
		dir := filepath.Join(root, "testdata", "providers", kind)
		if kind == "examples" {
			dir = filepath.Join(root, "examples", "providers")
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			return nil, fmt.Errorf("list the %s fixtures: %w", kind, err)
		}
		for _, e := range entries {
			if !e.IsDir() {
				continue
			}
			fdir := filepath.Join(dir, e.Name())
			if _, err := os.Stat(filepath.Join(fdir, "expect.json")); kind == "examples" && err != nil {
				continue // an example without a verdict to hold is not a fixture
			}
			name := kind + "/" + e.Name()
			out = append(out, Fixture{Name: name, Dir: fdir, Recording: RecordingPath(root, name)})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// RecordingPath is the file of a fixture's recorded evidence: testdata/evidence/broken-ID.json.gz.
func RecordingPath(root, fixture string) string {
	return filepath.Join(root, "testdata", "evidence", strings.ReplaceAll(fixture, "/", "-")+".json.gz")
}

// ReadExpectation reads a fixture's expect.json.
func ReadExpectation(dir string) (Expectation, error) {
	var exp Expectation
	data, err := os.ReadFile(filepath.Join(dir, "expect.json"))
	if err != nil {
		return exp, fmt.Errorf("read the fixture's expectation: %w", err)
	}
	if err := json.Unmarshal(data, &exp); err != nil {
		return exp, fmt.Errorf("%s: %w", filepath.Join(dir, "expect.json"), err)
	}
	return exp, nil
}

// Load reads a recording.
func Load(path string) (*conformance.Recording, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("no recorded evidence (record it with %s): %w", RecordCommand, err)
	}
	rec, err := conformance.DecodeRecording(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w (record it again with %s)", path, err, RecordCommand)
	}
	return rec, nil
}

// Judge holds replayed results to a fixture's expectation, as TestFixtures holds a live run: exactly the
// checks of Fails fail, each for the reason FailMessages claims; the checks of NotExercised end
// not_exercised; a fixture that fails nothing leaves no other check not_exercised; every pass says what it
// was decided over. It returns one line per breach.
func Judge(exp Expectation, results []report.Result) []string {
	var out []string
	if exp.Undecided {
		return []string{"the fixture expects the kit to refuse to decide, but a recording holds a judged run"}
	}
	failed := map[string]report.Result{}
	status := map[string]report.Result{}
	for _, r := range results {
		status[r.Check] = r
		if r.Status == report.StatusFailed {
			failed[r.Check] = r
		}
		if r.Status == report.StatusPassed && r.DecidedOver == "" {
			out = append(out, r.Check+" passed without saying what it was decided over")
		}
		if r.Status == report.StatusNotExercised && len(exp.Fails) == 0 && !slices.Contains(exp.NotExercised, r.Check) {
			out = append(out, r.Check+" was not exercised on a provider that should pass: "+r.Message)
		}
	}
	for _, id := range exp.Fails {
		if _, ok := failed[id]; !ok {
			out = append(out, fmt.Sprintf("expected %s to fail, it is %s: %s", id, status[id].Status, status[id].Message))
		}
	}
	for _, id := range slices.Sorted(maps.Keys(failed)) {
		if !slices.Contains(exp.Fails, id) {
			out = append(out, fmt.Sprintf("unexpected failure %s: %s", id, failed[id].Message))
		}
	}
	for _, id := range slices.Sorted(maps.Keys(exp.FailMessages)) {
		if r, ok := failed[id]; ok && !strings.Contains(r.Message, exp.FailMessages[id]) {
			out = append(out, fmt.Sprintf("%s failed for another reason than the fixture claims: %q lacks %q", id, r.Message, exp.FailMessages[id]))
		}
	}
	if len(exp.NotExercised) > 0 && exp.NotExercisedWhy == "" {
		out = append(out, "expect.json lists not_exercised checks without not_exercised_why")
	}
	for _, id := range exp.NotExercised {
		if r, ok := status[id]; !ok || r.Status != report.StatusNotExercised {
			out = append(out, fmt.Sprintf("expected %s to be not_exercised, got %s: %s", id, r.Status, r.Message))
		}
	}
	return out
}

// Faithful compares a replay with the verdicts the live run recorded: the same checks, each with the same
// status and message. It returns one line per difference.
func Faithful(rec *conformance.Recording, replayed []report.Result) []string {
	var out []string
	got := conformance.RecordedResults(replayed)
	if len(got) != len(rec.Results) {
		out = append(out, fmt.Sprintf("the replay judged %d checks, the live run %d", len(got), len(rec.Results)))
	}
	live := map[string]conformance.RecordedResult{}
	for _, r := range rec.Results {
		live[r.Check] = r
	}
	for _, r := range got {
		if w, ok := live[r.Check]; !ok || w != r {
			out = append(out, fmt.Sprintf("%s: replayed %s %q, recorded %s %q", r.Check, r.Status, r.Message, w.Status, w.Message))
		}
	}
	return out
}
