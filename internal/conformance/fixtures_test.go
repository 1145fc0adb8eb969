package conformance

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/astrabox-dev/astrabox/internal/harness"
	"github.com/astrabox-dev/astrabox/internal/report"
	"github.com/astrabox-dev/astrabox/internal/testutil"
)

// expectation is a fixture's expect.json.
type expectation struct {
	Fails          []string `json:"fails"`
	Warns          []string `json:"warns"`
	RequiresModule string   `json:"requires_module"`
	Undecided      bool     `json:"undecided"`
	Note           string   `json:"note"`
	// NotExercised are checks expected to end not_exercised (the suite cannot reach them yet), with why.
	NotExercised []string `json:"not_exercised"`
	// FailMessages maps failing checks to a text their message must hold (the breach is the one claimed).
	FailMessages    map[string]string `json:"fail_messages"`
	NotExercisedWhy string            `json:"not_exercised_why"`
}

func fixtureDirs(t *testing.T) []string {
	t.Helper()
	var dirs []string
	for _, pattern := range []string{"../../testdata/providers/broken/*", "../../testdata/providers/correct/*", "../../examples/providers/*"} {
		m, _ := filepath.Glob(pattern)
		for _, d := range m {
			if st, err := os.Stat(d); err == nil && st.IsDir() {
				dirs = append(dirs, d)
			}
		}
	}
	sort.Strings(dirs)
	return dirs
}

func runProject(t *testing.T, dir string) (*report.Report, error) {
	t.Helper()
	return runProjectWith(t, dir, nil)
}

// pathAsFoundIfPinned runs the rest of t with PATH as the test binary found it when the project pins a
// Python version (.python-version): TestMain put the interpreter behind pyenv's shim first on PATH, and pyenv's
// "system" version, which the real-client fixtures pin (Debian's interpreter, with the client libraries), is
// the first python3 on PATH after the shims. Such a project then meets the shim as before; others start their
// fakes' `python3` without it.
func pathAsFoundIfPinned(t *testing.T, project string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(project, ".python-version")); err == nil {
		t.Setenv("PATH", testutil.PathAsFound())
	}
}

// runProjectWith runs a fixture as runProject does, with the options changed by edit first (nil: none).
func runProjectWith(t *testing.T, dir string, edit func(*Options)) (*report.Report, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	abs, _ := filepath.Abs(dir)
	pathAsFoundIfPinned(t, abs)
	// The default slots (Options.suiteJobs), as a user's run has them: every live verdict and every comparison
	// with a recording is then made on the suite as the kit plays it by default.
	o := Options{Project: abs, Python: "python3", Getenv: pathOnly}
	if edit != nil {
		edit(&o)
	}
	return Run(ctx, o)
}

// collected is what collectSuite learnt: the resolved target, the options it ran with, what the harness
// learnt about the provider and the evidence of the default suite.
type collected struct {
	target *Target
	opts   Options
	info   *harness.LoadInfo
	ev     *Evidence
}

// collectSuite plays the default suite (seed 1, the default slots) on a fixture project and returns its evidence
// without judging it, for tests that look into the histories.
func collectSuite(t *testing.T, dir string) collected {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 180*time.Second)
	defer cancel()
	abs, _ := filepath.Abs(dir)
	pathAsFoundIfPinned(t, abs)
	o := Options{Project: abs, Python: "python3", Getenv: pathOnly}
	tg, info := resolveInspect(ctx, t, o)
	ev, err := Collect(ctx, tg, info, 1, o)
	if err != nil {
		t.Fatal(err)
	}
	return collected{target: tg, opts: o, info: info, ev: ev}
}

// pathOnly is the environment the fixture runs see: PATH and nothing else, so the caller's VIRTUAL_ENV,
// ASTRABOX_PYTHON or PYENV_VERSION never choose the interpreter.
func pathOnly(k string) string {
	if k == "PATH" {
		return os.Getenv("PATH")
	}
	return ""
}

// recordedName is the name a fixture directory's recording goes by: "broken/ID" or "correct/NAME" for a
// fixture of testdata/providers, "examples/NAME" for an example of examples/providers that holds an
// expect.json (an example without one has no verdict to hold a recording to, and is not recorded).
func recordedName(dir string) (string, bool) {
	kind, base := filepath.Base(filepath.Dir(dir)), filepath.Base(dir)
	if kind != "providers" {
		return kind + "/" + base, true
	}
	if _, err := os.Stat(filepath.Join(dir, "expect.json")); err != nil {
		return "", false
	}
	return "examples/" + base, true
}

// liveSample are the fixtures `make test` runs live, one correct and one broken, so that the live path (Python,
// the suite, the recording's staleness check) is exercised there; checktest replays every fixture's recorded
// verdict under -short, and the long lane (`make long`) runs every fixture live.
var liveSample = map[string]bool{
	"correct/minimal":              true,
	"broken/turn-idempotent":       true,
	"broken/turn-idempotent-httpx": true, // TestRealClientFixtures' sample
}

// TestFixtures runs the suite against every fixture provider and checks that broken ones fail exactly the
// checks they were written to break and that correct ones pass with no failure; the same run holds the
// fixture's recorded evidence to its live verdict, or records it again with -update (holdRecording).
// `make test` runs liveSample; the long lane runs every fixture.
func TestFixtures(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python for every fixture")
	}
	dirs := fixtureDirs(t)
	if len(dirs) == 0 {
		t.Fatal("no fixture providers found")
	}
	for _, dir := range dirs {
		dir := dir
		name := filepath.Base(filepath.Dir(dir)) + "/" + filepath.Base(dir)
		t.Run(name, func(t *testing.T) {
			if ownedByRealClients(name) {
				t.Skip("a real-client fixture: TestRealClientFixtures runs it in Debian's interpreter with its environment and proves it from its fake's record")
			}
			if !liveSample[name] {
				testutil.LongLane(t, "every fixture live")
			}
			var exp expectation
			data, err := os.ReadFile(filepath.Join(dir, "expect.json"))
			if err != nil {
				if !strings.Contains(dir, "examples") {
					t.Fatalf("fixture without expect.json: %v", err)
				}
			} else if err := json.Unmarshal(data, &exp); err != nil {
				t.Fatalf("bad expect.json: %v", err)
			}
			if exp.RequiresModule != "" {
				if err := exec.Command("python3", "-c", "import "+exp.RequiresModule).Run(); err != nil {
					t.Skipf("python3 has no %s module", exp.RequiresModule)
				}
			}
			var rec *Recording
			var rep *report.Report
			if fixture, ok := recordedName(dir); !ok || exp.Undecided {
				rep, err = runProject(t, dir)
			} else {
				rec, rep, err = sharedRecordRun(t, dir, fixture)
			}
			if exp.Undecided {
				if err == nil {
					t.Fatalf("expected the kit to refuse to decide, got a report")
				}
				return
			}
			if err != nil {
				t.Fatalf("run: %v", err)
			}
			failed := map[string]report.Result{}
			for _, r := range rep.Results {
				if r.Status == report.StatusFailed {
					failed[r.Check] = r
				}
			}
			for _, id := range exp.Fails {
				if _, ok := failed[id]; !ok {
					t.Errorf("expected %s to fail; results: %s", id, summarize(rep))
				}
			}
			for id, r := range failed {
				if !contains(exp.Fails, id) {
					t.Errorf("unexpected failure %s: %s\n  evidence: %+v", id, r.Message, r.Evidence)
				}
			}
			for id, want := range exp.FailMessages {
				if r, ok := failed[id]; ok && !strings.Contains(r.Message, want) {
					t.Errorf("%s failed for another reason than the fixture claims: %q lacks %q", id, r.Message, want)
				}
			}
			checkExercised(t, rep, exp)
			if rec != nil {
				holdRecording(t, rec, len(exp.Fails) > 0)
			}
		})
	}
}

// checkExercised holds a fixture to its exercise expectations: every check listed in not_exercised is
// not_exercised; a fixture that should fail nothing shows no other not_exercised result (a correct provider's
// run must decide every path it implements); every pass says what it was decided over. A broken fixture may
// leave checks downstream of its breakage unexercised: its failure already decides the run (exit 1).
func checkExercised(t *testing.T, rep *report.Report, exp expectation) {
	t.Helper()
	if len(exp.NotExercised) > 0 && exp.NotExercisedWhy == "" {
		t.Errorf("expect.json lists not_exercised checks without not_exercised_why")
	}
	status := map[string]report.Result{}
	for _, r := range rep.Results {
		status[r.Check] = r
		if r.Status == report.StatusPassed && r.DecidedOver == "" {
			t.Errorf("%s passed without saying what it was decided over", r.Check)
		}
		if r.Status == report.StatusNotExercised && len(exp.Fails) == 0 && !contains(exp.NotExercised, r.Check) {
			t.Errorf("%s was not exercised on a provider that should pass: %s", r.Check, r.Message)
		}
	}
	for _, id := range exp.NotExercised {
		if r, ok := status[id]; !ok || r.Status != report.StatusNotExercised {
			t.Errorf("expected %s to be not_exercised, got %s: %s", id, r.Status, r.Message)
		}
	}
}

func summarize(rep *report.Report) string {
	var b strings.Builder
	for _, r := range rep.Results {
		if r.Status != report.StatusPassed {
			b.WriteString("\n  " + r.Check + " " + string(r.Status) + ": " + r.Message)
		}
	}
	return b.String()
}

// ownedByRealClients reports whether the fixture named "correct/x" or "broken/x" is one of
// realClientFixtures, which TestRealClientFixtures runs (with the credentials and interpreter they need).
func ownedByRealClients(name string) bool {
	for _, fx := range realClientFixtures {
		if fx.dir == name {
			return true
		}
	}
	return false
}
