package recipes

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/rhysd/actionlint"
	"gopkg.in/yaml.v3"
)

// remoteAction is how the examples name this repository's action; for linting it becomes the local action
// ./ so that actionlint checks every input and output against action.yml.
var remoteAction = regexp.MustCompile(`astrabox-dev/astrabox@[^\s"']+`)

// lintRepo writes action.yml and the given workflows into a scratch repository (actionlint finds a project
// by its .git and .github/workflows) and lints each workflow, returning the errors by file.
func lintRepo(t *testing.T, workflows map[string]string) map[string][]*actionlint.Error {
	t.Helper()
	root := t.TempDir()
	for _, d := range []string{".git", filepath.Join(".github", "workflows")} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "action.yml"), readRepoFile(t, actionFile), 0o644); err != nil {
		t.Fatal(err)
	}
	opts := &actionlint.LinterOptions{WorkingDir: root, Color: actionlint.ColorOptionKindNever}
	if sc, err := exec.LookPath("shellcheck"); err == nil {
		opts.Shellcheck = sc // the workflows' run: scripts too, when the machine has shellcheck
	}
	linter, err := actionlint.NewLinter(io.Discard, opts)
	if err != nil {
		t.Fatal(err)
	}
	proj, err := actionlint.NewProject(root)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]*actionlint.Error{}
	for name, content := range workflows {
		p := filepath.Join(root, ".github", "workflows", name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		errs, err := linter.LintFile(p, proj)
		if err != nil {
			t.Fatalf("actionlint %s: %v", name, err)
		}
		out[name] = errs
	}
	return out
}

func reportLint(t *testing.T, errs map[string][]*actionlint.Error) {
	t.Helper()
	for name, es := range errs {
		for _, e := range es {
			t.Errorf("actionlint %s:%d:%d: %s [%s]", name, e.Line, e.Column, e.Message, e.Kind)
		}
	}
}

// TestActionlint lints the example workflow and a workflow that calls the action with every input, both
// against this action.yml, and checks that the linter really reads action.yml (a wrong input and a wrong
// output are caught).
func TestActionlint(t *testing.T) {
	example := string(readRepoFile(t, "examples/ci/github-workflow.yml"))
	if n := len(remoteAction.FindAllString(example, -1)); n < 3 {
		t.Fatalf("the example workflow uses the action %d times; want the conformance, explore and merge jobs", n)
	}
	self := string(readRepoFile(t, "internal/recipes/testdata/uses-action.yml"))
	reportLint(t, lintRepo(t, map[string]string{
		"example.yml":     remoteAction.ReplaceAllString(example, "./"),
		"uses-action.yml": self,
	}))

	// The self-test workflow passes every input and reads every output, so a renamed input or output in
	// action.yml shows up above as a lint error.
	a := readAction(t)
	var wf struct {
		Jobs map[string]struct {
			Steps []struct {
				Uses string            `yaml:"uses"`
				With map[string]string `yaml:"with"`
			} `yaml:"steps"`
		} `yaml:"jobs"`
	}
	if err := yaml.Unmarshal([]byte(self), &wf); err != nil {
		t.Fatal(err)
	}
	passed := map[string]bool{}
	for _, j := range wf.Jobs {
		for _, s := range j.Steps {
			if s.Uses == "./" {
				for k := range s.With {
					passed[k] = true
				}
			}
		}
	}
	for name := range a.Inputs {
		if !passed[name] {
			t.Errorf("testdata/uses-action.yml does not pass input %s", name)
		}
	}
	for name := range a.Outputs {
		if !strings.Contains(self, "steps.astrabox.outputs."+name+" ") {
			t.Errorf("testdata/uses-action.yml does not read output %s", name)
		}
	}

	bad := strings.Replace(self, "          version: \"\"\n", "          version: \"\"\n          no-such-input: x\n", 1)
	bad = strings.Replace(bad, "steps.astrabox.outputs.result", "steps.astrabox.outputs.no-such-output", 1)
	if bad == self {
		t.Fatal("could not plant the wrong input and output")
	}
	var msgs []string
	for _, e := range lintRepo(t, map[string]string{"bad.yml": bad})["bad.yml"] {
		msgs = append(msgs, e.Message)
	}
	all := strings.Join(msgs, "\n")
	if !strings.Contains(all, `"no-such-input" is not defined`) || !strings.Contains(all, `"no-such-output" is not defined`) {
		t.Errorf("actionlint did not check the calls against action.yml; it said:\n%s", all)
	}
}
