package conformance

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/astrabox-dev/astrabox/internal/report"
)

var updateEvidence = flag.Bool("update", false, "TestFixtures and TestRealClientFixtures: record the fixtures' evidence again into testdata/evidence")

// EvidenceDir holds the recordings, one per fixture, beside testdata/providers where the fixtures live, so
// that internal/conformance/checktest (and any other package) reaches them from the repository's root.
const evidenceDir = "../../testdata/evidence"

// recordCommand is the command that records the evidence again, for the messages that ask for it.
const recordCommand = "ASTRABOX_UPDATE_EVIDENCE=1 go test ./internal/conformance -run 'TestFixtures|TestRealClientFixtures' -timeout 60m (or -run 'TestFixtures/broken/ID$' for one fixture; a real-client one under TestRealClientFixtures)"

// recordingFile is the file of a fixture's recording ("broken/leak-log" → broken-leak-log.json.gz).
func recordingFile(fixture string) string {
	return filepath.Join(evidenceDir, strings.ReplaceAll(fixture, "/", "-")+".json.gz")
}

// repoRoot is the repository's root, absolute.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// replayedFixtures are the fixtures TestRecordingReplaysTheLiveReport records: TestFixtures runs them live too
// (broken/turn-idempotent in its `make test` sample, both in the long lane), and the two tests share that one
// live run (sharedRecordRun) instead of playing the fixture's suite twice.
var replayedFixtures = []string{"broken/turn-idempotent", "broken/leak-log"}

// sharedRuns holds the live runs of replayedFixtures made so far in this test binary, by fixture.
var sharedRuns = struct {
	sync.Mutex
	m map[string]sharedRun
}{m: map[string]sharedRun{}}

// sharedRun is one live run of a fixture as recordRun returns it.
type sharedRun struct {
	rec *Recording
	rep *report.Report
	err error
}

// sharedRecordRun is recordRun, made once per test binary for a fixture of replayedFixtures (each test that
// calls it only reads the recording and the report), and made afresh for any other fixture.
func sharedRecordRun(t *testing.T, dir, fixture string) (*Recording, *report.Report, error) {
	t.Helper()
	if !slices.Contains(replayedFixtures, fixture) {
		return recordRun(t, dir, fixture)
	}
	sharedRuns.Lock()
	defer sharedRuns.Unlock()
	if r, ok := sharedRuns.m[fixture]; ok {
		return r.rec, r.rep, r.err
	}
	rec, rep, err := recordRun(t, dir, fixture)
	sharedRuns.m[fixture] = sharedRun{rec, rep, err}
	return rec, rep, err
}

// recordRun runs a fixture and returns, beside the report, the recording of what its judge was handed and
// the run's verdicts; the error is the run's own (a fixture the kit refuses to decide has no recording).
func recordRun(t *testing.T, dir, fixture string) (*Recording, *report.Report, error) {
	t.Helper()
	var rec *Recording
	rep, err := runProjectWith(t, dir, func(o *Options) {
		o.recordEvidence = func(ev *Evidence, tg *Target) {
			rec = &Recording{Fixture: fixture, Evidence: ev, NearMiss: tg == nil}
			if tg != nil && tg.Settings != nil {
				rec.Skipped = tg.Settings.Skip
				if tg.Settings.File != "" {
					rec.SkipFile = filepath.Base(tg.Settings.File)
				}
			}
		}
	})
	if err != nil {
		return nil, rep, err
	}
	if rec == nil {
		t.Fatal("the run judged no evidence")
	}
	rec.Results = RecordedResults(rep.Results)
	return rec, rep, nil
}

// developerValues are the values of the environment the tests started in (at least 8 bytes long), by
// variable, which no recording may hold. System paths (/etc/..., /usr/...) are left out: they name the
// distribution's files, the same on every machine of it (the CA bundle the kit's trust check names is
// also what CA-bundle variables point at), not the recorder's.
func developerValues() map[string]string {
	out := map[string]string{}
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(v, "/etc/") || strings.HasPrefix(v, "/usr/") {
			continue
		}
		if len(v) >= 8 {
			out[k] = v
		}
	}
	return out
}

var startEnv = developerValues()

// holdsDeveloperValue names the first variable of the tests' starting environment whose value the data
// holds ("" when none), and says whether the home directory appears as a path.
func holdsDeveloperValue(data string, root string) string {
	for k, v := range startEnv {
		if strings.Contains(data, v) && !strings.HasPrefix(root, v) {
			return k
		}
	}
	if home := os.Getenv("HOME"); home != "" && home != "/" && strings.Contains(data, home+"/") {
		return "HOME"
	}
	return ""
}

// auditedRewrite is RootRewrite that also fails the test when a string or byte string it writes holds a
// value of the environment the tests started in (naming the variable, never the value).
func auditedRewrite(t *testing.T, root string) func(string) string {
	rewrite := RootRewrite(root, os.Getenv("HOME"))
	reported := false
	return func(s string) string {
		s = rewrite(s)
		if k := holdsDeveloperValue(s, root); k != "" && !reported {
			reported = true
			t.Errorf("the recording would hold the value of %s from the environment the tests ran in; it must hold only the fixture's own values (normalise it in RootRewrite or leave it out of Evidence)", k)
		}
		return s
	}
}

// updating reports whether this run records the fixtures' evidence again (-update or
// ASTRABOX_UPDATE_EVIDENCE=1) rather than holding the live verdicts to the recordings.
func updating() bool {
	return *updateEvidence || os.Getenv("ASTRABOX_UPDATE_EVIDENCE") == "1"
}

// holdRecording is the long lane of recorded evidence, run on the live run TestFixtures or
// TestRealClientFixtures has just made of a fixture (one run per fixture serves both): when updating, it
// writes what the judge was handed to testdata/evidence; otherwise it says when the recording's verdict is no
// longer the live one (internal/conformance/checktest replays the recordings under -short).
//
// A broken fixture may leave checks downstream of its breakage unexercised (checkExercised), and whether a
// downstream check was reached before the breakage decided the run can vary from run to run; its verdict is
// its failures. So for a broken fixture (downstream true) a check that passed in one run and was not
// exercised in the other is not staleness; every other change is.
func holdRecording(t *testing.T, rec *Recording, downstream bool) {
	t.Helper()
	data, err := EncodeRecording(rec, auditedRewrite(t, repoRoot(t)))
	if err != nil {
		t.Fatal(err)
	}
	if t.Failed() {
		t.FailNow() // never write a recording that holds the recorder's environment
	}
	if _, err := DecodeRecording(data); err != nil {
		t.Fatalf("the recording does not read back: %v", err)
	}
	file := recordingFile(rec.Fixture)
	if updating() {
		if err := os.MkdirAll(evidenceDir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	old, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("no recording of %s (%v): record it with %s", rec.Fixture, err, recordCommand)
	}
	was, err := DecodeRecording(old)
	if err != nil {
		t.Fatalf("%s: %v; record it again with %s", file, err, recordCommand)
	}
	if d := verdictDiff(was.Results, rec.Results, downstream); d != "" {
		t.Errorf("recording is stale: the live run's verdict differs from %s:%s\nre-record with %s", file, d, recordCommand)
	}
}

// verdictDiff lists the checks whose status differs between a recorded and a live verdict; with downstream, a
// change between passed and not_exercised is left out (see holdRecording).
func verdictDiff(recorded, live []RecordedResult, downstream bool) string {
	was := map[string]report.Status{}
	for _, r := range recorded {
		was[r.Check] = r.Status
	}
	var b strings.Builder
	seen := map[string]bool{}
	for _, r := range live {
		seen[r.Check] = true
		if s, ok := was[r.Check]; !ok {
			b.WriteString("\n  " + r.Check + ": not recorded, live " + string(r.Status))
		} else if s != r.Status && !(downstream && reachedOrNot(s, r.Status)) {
			b.WriteString("\n  " + r.Check + ": recorded " + string(s) + ", live " + string(r.Status))
		}
	}
	for _, r := range recorded {
		if !seen[r.Check] {
			b.WriteString("\n  " + r.Check + ": recorded " + string(r.Status) + ", no longer judged")
		}
	}
	return b.String()
}

// TestRecordingReplaysTheLiveReport records one fixture whose checks read raw request bodies and material
// files, reads the recording back and replays it: the replay gives every check the live run's status and
// message, and writing the replayed evidence again gives the same bytes.
func TestRecordingReplaysTheLiveReport(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python")
	}
	root := repoRoot(t)
	for _, fixture := range replayedFixtures {
		t.Run(fixture, func(t *testing.T) {
			rec, rep, err := sharedRecordRun(t, filepath.Join("../../testdata/providers", fixture), fixture)
			if err != nil {
				t.Fatalf("run: %v", err)
			}
			data, err := EncodeRecording(rec, RootRewrite(root, os.Getenv("HOME")))
			if err != nil {
				t.Fatal(err)
			}
			back, err := DecodeRecording(data)
			if err != nil {
				t.Fatal(err)
			}
			rewrite := RootRewrite(root, os.Getenv("HOME"))
			live := map[string]RecordedResult{}
			for _, r := range RecordedResults(rep.Results) {
				r.Message = rewrite(r.Message)
				live[r.Check] = r
			}
			replayedResults, err := back.Replay()
			if err != nil {
				t.Fatal(err)
			}
			replayed := RecordedResults(replayedResults)
			if len(replayed) != len(live) {
				t.Fatalf("replay judged %d checks, the live run %d", len(replayed), len(live))
			}
			for _, r := range replayed {
				if live[r.Check] != r {
					t.Errorf("%s: replayed %s %q, live %s %q", r.Check, r.Status, r.Message, live[r.Check].Status, live[r.Check].Message)
				}
			}
			bodies := 0
			for i, h := range rec.Evidence.Histories {
				for j := range h.Requests {
					want, got := h.Requests[j].RawBody(), back.Evidence.Histories[i].Requests[j].RawBody()
					if string(want) != string(got) {
						t.Errorf("history %d request %d: raw body %q read back as %q", i, j, want, got)
					}
					if len(want) > 0 {
						bodies++
					}
				}
			}
			if bodies == 0 {
				t.Errorf("the run recorded no raw request body, so this test proves nothing of them")
			}
			again, err := EncodeRecording(back, nil)
			if err != nil {
				t.Fatal(err)
			}
			if string(again) != string(data) {
				t.Errorf("the evidence read back writes other bytes than it was read from")
			}
		})
	}
}

// TestVerdictDiffNamesEveryChangedCheck: the stale test's comparison names a check whose status changed, a
// check judged now but not recorded, and one recorded but no longer judged; equal verdicts give nothing.
func TestVerdictDiffNamesEveryChangedCheck(t *testing.T) {
	recorded := []RecordedResult{{Check: "A", Status: report.StatusPassed}, {Check: "B", Status: report.StatusFailed}, {Check: "C", Status: report.StatusPassed}}
	if d := verdictDiff(recorded, recorded, false); d != "" {
		t.Errorf("equal verdicts differ: %s", d)
	}
	live := []RecordedResult{{Check: "A", Status: report.StatusPassed, Message: "another message"}, {Check: "B", Status: report.StatusPassed}, {Check: "D", Status: report.StatusPassed}}
	d := verdictDiff(recorded, live, false)
	for _, want := range []string{"B: recorded failed, live passed", "D: not recorded, live passed", "C: recorded passed, no longer judged"} {
		if !strings.Contains(d, want) {
			t.Errorf("%q lacks %q", d, want)
		}
	}
	if strings.Contains(d, "A:") {
		t.Errorf("a message change alone was called stale: %s", d)
	}
	// Downstream of a broken fixture's breakage, reached or not is no staleness; a failure's change still is.
	reached := []RecordedResult{{Check: "A", Status: report.StatusNotExercised}, {Check: "B", Status: report.StatusPassed}, {Check: "C", Status: report.StatusPassed}}
	d = verdictDiff(recorded, reached, true)
	if strings.Contains(d, "A:") || !strings.Contains(d, "B: recorded failed, live passed") {
		t.Errorf("downstream comparison: %q", d)
	}
	if d := verdictDiff(recorded, reached, false); !strings.Contains(d, "A: recorded passed, live not_exercised") {
		t.Errorf("a correct fixture's unreached check was not called stale: %q", d)
	}
}

// reachedOrNot reports whether two statuses differ only in whether the check was reached: one passed, the
// other not exercised.
func reachedOrNot(a, b report.Status) bool {
	return (a == report.StatusPassed && b == report.StatusNotExercised) || (a == report.StatusNotExercised && b == report.StatusPassed)
}
