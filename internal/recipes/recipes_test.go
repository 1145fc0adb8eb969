// Package recipes tests the CI recipes shipped with astrabox: the composite GitHub Action (action.yml), the
// example GitHub workflow and GitLab job (examples/ci) and the pre-commit hook (.pre-commit-hooks.yaml). The
// workflows are linted with actionlint; the shell the recipes run is executed for real against passing
// providers (correct/minimal, the reference example) and a deliberately broken one, with a freshly built
// astrabox binary. The package holds tests only.
package recipes

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

const (
	referenceProject = "examples/providers/reference"
	leakLogProject   = "testdata/providers/broken/leak-log"
	// minimalProject is the passing project of the recipes' runs: the recipe, not the provider, is under
	// test there, and correct/minimal's suite is the cheapest that passes (the reference provider's runs are
	// the conformance and cli packages').
	minimalProject = "testdata/providers/correct/minimal"
	// runBound only stops a hung run; it is no performance assertion.
	runBound = 6 * time.Minute
)

// repoRoot is the repository root, found from this file's location.
func repoRoot(t testing.TB) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("cannot locate the test source")
	}
	root := filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("repository root %s has no go.mod: %v", root, err)
	}
	return root
}

func readRepoFile(t testing.TB, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), rel))
	if err != nil {
		t.Fatalf("read %s: %v", rel, err)
	}
	return b
}

// needTools skips when a tool the recipes themselves run is missing from the machine.
func needTools(t testing.TB, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not on PATH; the recipes run it", tool)
		}
	}
}

// buildAstrabox builds ./cmd/astrabox into a fresh directory and returns that directory.
func buildAstrabox(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), runBound)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(dir, "astrabox"), "./cmd/astrabox")
	cmd.Dir = repoRoot(t)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/astrabox: %v\n%s", err, out)
	}
	return dir
}

// workspace makes a scratch repository holding copies of the reference provider, the leak-log provider and
// the minimal provider at their usual paths (leak-log finds the reference through a relative python-path).
func workspace(t testing.TB) string {
	t.Helper()
	ws := t.TempDir()
	root := repoRoot(t)
	for _, rel := range []string{referenceProject, leakLogProject, minimalProject} {
		if err := copyTree(filepath.Join(root, rel), filepath.Join(ws, rel)); err != nil {
			t.Fatalf("copy %s: %v", rel, err)
		}
	}
	return ws
}

func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "__pycache__" || d.Name() == ".astrabox") {
			return filepath.SkipDir
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, info.Mode().Perm())
	})
}

// baseEnv is the test process's environment without CI variables of the machine running the tests and with
// PATH stripped of any astrabox other than the one under test; extra entries are prepended to PATH.
func baseEnv(pathFirst ...string) []string {
	var env []string
	var path []string
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(k, "GITHUB_") || strings.HasPrefix(k, "RUNNER_") || strings.HasPrefix(k, "CI_") ||
			k == "CI" || k == "GITLAB_CI" || strings.HasPrefix(k, "ASTRABOX_") || k == "VIRTUAL_ENV" || k == "CONDA_PREFIX":
			continue
		case k == "PATH":
			for _, d := range filepath.SplitList(v) {
				if _, err := os.Stat(filepath.Join(d, "astrabox")); err == nil {
					continue
				}
				path = append(path, d)
			}
			continue
		}
		env = append(env, kv)
	}
	return append(env, "PATH="+strings.Join(append(append([]string{}, pathFirst...), path...), string(filepath.ListSeparator)))
}

// lookPathIn finds name in the PATH of env (exec.Command would search the test process's own PATH).
func lookPathIn(name string, env []string) string {
	if strings.ContainsRune(name, filepath.Separator) {
		return name
	}
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			for _, d := range filepath.SplitList(v) {
				p := filepath.Join(d, name)
				if info, err := os.Stat(p); err == nil && !info.IsDir() && info.Mode()&0o111 != 0 {
					return p
				}
			}
		}
	}
	return name
}

// runResult is what one executed recipe did.
type runResult struct {
	code   int
	output string
}

// run executes argv in dir with env, bounded by runBound, and returns the exit status and combined output.
func run(t testing.TB, dir string, env []string, argv ...string) runResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), runBound)
	defer cancel()
	cmd := exec.CommandContext(ctx, lookPathIn(argv[0], env), argv[1:]...)
	cmd.Dir = dir
	cmd.Env = env
	cmd.WaitDelay = 10 * time.Second
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("%s did not finish within %s (hang?)\n%s", strings.Join(argv, " "), runBound, out.String())
	}
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run %s: %v", strings.Join(argv, " "), err)
	}
	return runResult{code: code, output: out.String()}
}

// junitReport is the part of a JUnit file the recipes rely on.
type junitReport struct {
	XMLName xml.Name `xml:"testsuites"`
	// Tests, Failures and Errors add up the suites' counts (<testsuites> carries none: the Ant schema
	// allows no attribute there).
	Tests, Failures, Errors int `xml:"-"`
	Suites                  []struct {
		Name     string `xml:"name,attr"`
		Tests    int    `xml:"tests,attr"`
		Failures int    `xml:"failures,attr"`
		Errors   int    `xml:"errors,attr"`
		Cases    []struct {
			Name    string    `xml:"name,attr"`
			Failure *struct{} `xml:"failure"`
			Error   *struct {
				Text string `xml:",chardata"`
			} `xml:"error"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

func readJUnit(t testing.TB, path string) junitReport {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("JUnit report: %v", err)
	}
	var j junitReport
	if err := xml.Unmarshal(b, &j); err != nil {
		t.Fatalf("JUnit report %s does not parse: %v", path, err)
	}
	for _, s := range j.Suites {
		j.Tests, j.Failures, j.Errors = j.Tests+s.Tests, j.Failures+s.Failures, j.Errors+s.Errors
	}
	if j.Tests == 0 || len(j.Suites) == 0 {
		t.Fatalf("JUnit report %s has no tests: %+v", path, j)
	}
	return j
}

// failedCases returns the names of the JUnit test cases with a failure.
func (j junitReport) failedCases() []string {
	var out []string
	for _, s := range j.Suites {
		for _, c := range s.Cases {
			if c.Failure != nil {
				out = append(out, c.Name)
			}
		}
	}
	return out
}

// jsonReport is the part of an astrabox.conformance/v1 report the recipes rely on.
type jsonReport struct {
	Schema   string `json:"schema"`
	Provider struct {
		Name    string `json:"name"`
		Project string `json:"project"`
		Python  string `json:"python_path"`
	} `json:"provider"`
	Seed    int64 `json:"seed"`
	Summary struct {
		Total  int `json:"total"`
		Failed int `json:"failed"`
	} `json:"summary"`
	Results []struct {
		Check    string `json:"check"`
		Status   string `json:"status"`
		Location *struct {
			Path string `json:"path"`
			Line int    `json:"line"`
		} `json:"location"`
	} `json:"results"`
}

func readJSONReport(t testing.TB, path string) jsonReport {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("JSON report: %v", err)
	}
	var r jsonReport
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("JSON report %s does not parse: %v", path, err)
	}
	if r.Schema != "astrabox.conformance/v1" || r.Summary.Total == 0 {
		t.Fatalf("JSON report %s: schema %q, %d results", path, r.Schema, r.Summary.Total)
	}
	return r
}

// failedChecks returns the IDs of failed or flaky results.
func (r jsonReport) failedChecks() []string {
	var out []string
	for _, res := range r.Results {
		if res.Status == "failed" || res.Status == "flaky" {
			out = append(out, res.Check)
		}
	}
	return out
}

// codeQualityIssue is one issue of GitLab's Code Quality report.
type codeQualityIssue struct {
	Description string `json:"description"`
	CheckName   string `json:"check_name"`
	Fingerprint string `json:"fingerprint"`
	Severity    string `json:"severity"`
	Location    struct {
		Path  string `json:"path"`
		Lines struct {
			Begin int `json:"begin"`
		} `json:"lines"`
	} `json:"location"`
}

// readCodeQuality reads a Code Quality report and checks every field GitLab requires; paths must name files
// that exist in the repository ws.
func readCodeQuality(t testing.TB, path, ws string) []codeQualityIssue {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("code quality report: %v", err)
	}
	var raw []map[string]any
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatalf("code quality report %s is not a JSON list of objects: %v\n%s", path, err, b)
	}
	var issues []codeQualityIssue
	if err := json.Unmarshal(b, &issues); err != nil {
		t.Fatalf("code quality report %s: %v", path, err)
	}
	severities := map[string]bool{"info": true, "minor": true, "major": true, "critical": true, "blocker": true}
	seen := map[string]bool{}
	for i, is := range issues {
		for _, k := range []string{"description", "check_name", "fingerprint", "severity", "location"} {
			if _, ok := raw[i][k]; !ok {
				t.Errorf("issue %d lacks %q: %v", i, k, raw[i])
			}
		}
		if is.Description == "" || is.CheckName == "" || is.Fingerprint == "" {
			t.Errorf("issue %d has an empty description, check_name or fingerprint: %+v", i, is)
		}
		if !severities[is.Severity] {
			t.Errorf("issue %d: severity %q is not one GitLab knows", i, is.Severity)
		}
		if seen[is.Fingerprint] {
			t.Errorf("issue %d: fingerprint %s is not unique", i, is.Fingerprint)
		}
		seen[is.Fingerprint] = true
		if is.Location.Lines.Begin < 1 {
			t.Errorf("issue %d: location.lines.begin = %d", i, is.Location.Lines.Begin)
		}
		if p := is.Location.Path; p == "" || filepath.IsAbs(p) || strings.HasPrefix(p, "..") {
			t.Errorf("issue %d: location.path %q is not relative to the repository", i, p)
		} else if _, err := os.Stat(filepath.Join(ws, p)); err != nil {
			t.Errorf("issue %d: location.path %q does not exist in the repository: %v", i, p, err)
		}
	}
	return issues
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func mustExist(t testing.TB, path string) {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("expected %s: %v", path, err)
	}
}

// TestRecipesRun executes the GitLab job, the pre-commit hook, the action's steps and the example workflow's
// merge step against the minimal provider (the action against the reference provider; they must pass) and
// the leak-log provider (they must fail and say why). The runs mostly wait on the harness, so they start together from goroutines instead of queueing
// behind -parallel.
func TestRecipesRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python (skipped under -short)")
	}
	needTools(t, "bash", "python3", "go")
	bin := buildAstrabox(t)
	cases := []struct {
		name string
		fn   func(t *testing.T, bin string)
	}{
		{"gitlab/minimal", func(t *testing.T, bin string) { testGitLab(t, bin, minimalProject, 0) }},
		{"gitlab/leak-log", func(t *testing.T, bin string) { testGitLab(t, bin, leakLogProject, 1) }},
		{"gitlab/undecided", func(t *testing.T, bin string) { testGitLab(t, bin, "no/such/project", 2) }},
		{"pre-commit/minimal", func(t *testing.T, bin string) { testPreCommit(t, bin, minimalProject, 0) }},
		{"pre-commit/leak-log", func(t *testing.T, bin string) { testPreCommit(t, bin, leakLogProject, 1) }},
		// The action's passing run stays on the reference provider: its SARIF must hold no result at all, and
		// correct/minimal's not-applicable checks are results there.
		{"action/reference", func(t *testing.T, bin string) { testAction(t, referenceProject, 0) }},
		{"action/leak-log", func(t *testing.T, bin string) { testAction(t, leakLogProject, 1) }},
		{"action/undecided", func(t *testing.T, bin string) { testActionUndecided(t) }},
		{"github-workflow/merge", testWorkflowMerge},
	}
	done := make(chan struct{}, len(cases))
	for _, c := range cases {
		go func() {
			defer func() { done <- struct{}{} }()
			t.Run(c.name, func(t *testing.T) { c.fn(t, bin) })
		}()
	}
	for range cases {
		<-done
	}
}

func dump(t testing.TB, what string, res runResult) {
	t.Helper()
	if t.Failed() {
		t.Logf("%s (exit %d):\n%s", what, res.code, res.output)
	}
}
