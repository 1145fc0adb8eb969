package recipes

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

const gitlabFile = "examples/ci/gitlab-ci.yml"

// gitlabJob is the part of a GitLab CI job the recipe uses.
type gitlabJob struct {
	Stage        string            `yaml:"stage"`
	Image        string            `yaml:"image"`
	Needs        []string          `yaml:"needs"`
	Variables    map[string]string `yaml:"variables"`
	BeforeScript []string          `yaml:"before_script"`
	Script       []string          `yaml:"script"`
	Artifacts    struct {
		When    string   `yaml:"when"`
		Paths   []string `yaml:"paths"`
		Reports struct {
			JUnit       string `yaml:"junit"`
			CodeQuality string `yaml:"codequality"`
		} `yaml:"reports"`
	} `yaml:"artifacts"`
}

type gitlabCI struct {
	Variables map[string]string
	Stages    []string
	Jobs      map[string]gitlabJob
}

func readGitLab(t testing.TB) gitlabCI {
	t.Helper()
	var top map[string]yaml.Node
	if err := yaml.Unmarshal(readRepoFile(t, gitlabFile), &top); err != nil {
		t.Fatalf("%s: %v", gitlabFile, err)
	}
	ci := gitlabCI{Jobs: map[string]gitlabJob{}}
	for k, n := range top {
		var err error
		switch k {
		case "variables":
			err = n.Decode(&ci.Variables)
		case "stages":
			err = n.Decode(&ci.Stages)
		default:
			var j gitlabJob
			err = n.Decode(&j)
			ci.Jobs[k] = j
		}
		if err != nil {
			t.Fatalf("%s: %s: %v", gitlabFile, k, err)
		}
	}
	return ci
}

// TestGitLabStructure checks the pipeline's wiring: stages exist, needs name jobs, and the conformance job
// publishes its reports even when it fails.
func TestGitLabStructure(t *testing.T) {
	ci := readGitLab(t)
	for name, j := range ci.Jobs {
		if !contains(ci.Stages, j.Stage) {
			t.Errorf("job %s: stage %q is not in stages %v", name, j.Stage, ci.Stages)
		}
		for _, n := range j.Needs {
			if _, ok := ci.Jobs[n]; !ok {
				t.Errorf("job %s needs %q, which is no job", name, n)
			}
		}
		if len(j.Script) == 0 {
			t.Errorf("job %s has no script", name)
		}
	}
	j, ok := ci.Jobs["astrabox-conformance"]
	if !ok {
		t.Fatalf("%s has no astrabox-conformance job", gitlabFile)
	}
	if j.Artifacts.When != "always" {
		t.Errorf("astrabox-conformance artifacts.when = %q; reports of a failing job are lost unless it is always", j.Artifacts.When)
	}
	if j.Artifacts.Reports.JUnit == "" || j.Artifacts.Reports.CodeQuality == "" {
		t.Errorf("astrabox-conformance must publish junit and codequality reports: %+v", j.Artifacts.Reports)
	}
	install, ok := ci.Jobs["astrabox-install"]
	if !ok {
		t.Fatalf("%s has no astrabox-install job", gitlabFile)
	}
	// The conformance job finds the binary where the install job leaves its artifact.
	if !contains(install.Artifacts.Paths, ".astrabox-bin/") || !strings.Contains(install.Variables["GOBIN"], ".astrabox-bin") {
		t.Errorf("astrabox-install must install into .astrabox-bin and keep it as an artifact: %+v", install)
	}
	if !strings.Contains(strings.Join(install.Script, "\n"), "github.com/astrabox-dev/astrabox/cmd/astrabox@${ASTRABOX_VERSION}") {
		t.Errorf("astrabox-install must go install the command at ASTRABOX_VERSION: %v", install.Script)
	}
}

// gitlabVar expands $VAR and ${VAR} in a variable's value the way GitLab does before the job starts.
var gitlabVar = regexp.MustCompile(`\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?`)

// testGitLab runs the astrabox-conformance job's before_script and script in one bash, as a GitLab runner
// does, in a scratch repository with the provider at project, and checks the exit status and both reports.
func testGitLab(t *testing.T, bin, project string, wantCode int) {
	ci := readGitLab(t)
	job := ci.Jobs["astrabox-conformance"]
	ws := workspace(t)
	// The astrabox-install job's artifact: the binary in .astrabox-bin of the project directory. It is not
	// on PATH otherwise, so the job's before_script must put it there.
	if err := copyTree(bin, filepath.Join(ws, ".astrabox-bin")); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{"CI": "true", "GITLAB_CI": "true", "CI_PROJECT_DIR": ws}
	for _, scope := range []map[string]string{ci.Variables, job.Variables} {
		for k, v := range scope {
			vars[k] = gitlabVar.ReplaceAllStringFunc(v, func(m string) string {
				return vars[gitlabVar.FindStringSubmatch(m)[1]]
			})
		}
	}
	vars["ASTRABOX_PROJECT"] = project // as a project would set it for a provider in a subdirectory
	// The job installs the project with pip. These machines have no package index: pip builds it with the
	// interpreter's own setuptools (no build isolation) into a scratch user site, never the machine's.
	vars["PIP_NO_INDEX"], vars["PIP_NO_BUILD_ISOLATION"], vars["PIP_USER"] = "1", "0", "1"
	vars["PYTHONUSERBASE"], vars["PIP_DISABLE_PIP_VERSION_CHECK"] = t.TempDir(), "1"
	// Debian marks its python3 externally managed (PEP 668), which refuses even a user install; this one goes
	// into the scratch PYTHONUSERBASE above, never the system's site-packages.
	vars["PIP_BREAK_SYSTEM_PACKAGES"] = "1"
	// Without an index, an editable build needs setuptools and wheel in the job's python; Debian's python3 has
	// both (python3-setuptools, python3-wheel), so the job's `python` is that one when it is there.
	var pyFirst []string
	if _, err := os.Stat("/usr/bin/python3"); err == nil {
		shim := t.TempDir()
		if err := os.Symlink("/usr/bin/python3", filepath.Join(shim, "python")); err != nil {
			t.Fatal(err)
		}
		pyFirst = append(pyFirst, shim)
	}
	env := baseEnv(pyFirst...)
	for k, v := range vars {
		env = append(env, k+"="+v)
	}
	script := "set -eo pipefail\n" + strings.Join(append(append([]string{}, job.BeforeScript...), job.Script...), "\n") + "\n"
	scriptPath := filepath.Join(t.TempDir(), "job.sh")
	if err := os.WriteFile(scriptPath, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	res := run(t, ws, env, "bash", "--noprofile", "--norc", scriptPath)
	defer dump(t, "GitLab job", res)
	if wantCode != 2 && !strings.Contains(res.output, "Successfully installed") {
		t.Errorf("the job did not install the project before the suite")
	}
	if res.code != wantCode {
		t.Fatalf("GitLab job exit status %d, want %d", res.code, wantCode)
	}
	junitPath := filepath.Join(ws, job.Artifacts.Reports.JUnit)
	cqPath := filepath.Join(ws, job.Artifacts.Reports.CodeQuality)
	if wantCode == 2 {
		// No report: the job fails with the kit's own status, leaves no code quality report, and the JUnit
		// report holds one error case that says why.
		if _, err := os.Stat(cqPath); err == nil {
			t.Errorf("an undecided run left a code quality report %s", cqPath)
		}
		junit := readJUnit(t, junitPath)
		if junit.Errors != 1 || junit.Suites[0].Cases[0].Error == nil || !strings.Contains(junit.Suites[0].Cases[0].Error.Text, "no/such/project") {
			t.Errorf("the undecided run's JUnit report does not carry the error: %+v", junit)
		}
		return
	}
	for _, p := range job.Artifacts.Paths {
		mustExist(t, filepath.Join(ws, p))
	}
	junit := readJUnit(t, junitPath)
	rep := readJSONReport(t, filepath.Join(ws, "astrabox.json"))
	issues := readCodeQuality(t, cqPath, ws)
	failed := rep.failedChecks()
	if junit.Failures != len(failed) || len(junit.failedCases()) != len(failed) {
		t.Errorf("JUnit has %d failures (%v), the JSON report %d (%v)", junit.Failures, junit.failedCases(), len(failed), failed)
	}
	if wantCode == 0 {
		if len(failed) != 0 || len(issues) != 0 {
			t.Errorf("a passing run has failed checks %v and code quality issues %+v", failed, issues)
		}
		return
	}
	if !contains(failed, "LEAK-LOG") {
		t.Fatalf("the leak-log provider did not fail LEAK-LOG: %v", failed)
	}
	var leak *codeQualityIssue
	for i := range issues {
		if issues[i].CheckName == "LEAK-LOG" {
			leak = &issues[i]
		}
	}
	if leak == nil {
		t.Fatalf("the code quality report does not list LEAK-LOG: %+v", issues)
	}
	for _, r := range rep.Results {
		if r.Check != "LEAK-LOG" || r.Location == nil {
			continue
		}
		want := filepath.ToSlash(filepath.Join(project, r.Location.Path))
		if leak.Location.Path != want || leak.Location.Lines.Begin != r.Location.Line {
			t.Errorf("LEAK-LOG is at %s:%d in the code quality report, %s:%d in the JSON report",
				leak.Location.Path, leak.Location.Lines.Begin, want, r.Location.Line)
		}
	}
	if leak.Severity != "critical" || !strings.Contains(leak.Description, "LEAK-LOG") {
		t.Errorf("LEAK-LOG issue: severity %q, description %q", leak.Severity, leak.Description)
	}
	leakCase := false
	for _, name := range junit.failedCases() {
		leakCase = leakCase || strings.HasPrefix(name, "LEAK-LOG ")
	}
	if !leakCase {
		t.Errorf("no failed JUnit test case for LEAK-LOG: %v", junit.failedCases())
	}
}
