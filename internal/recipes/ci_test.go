package recipes

import (
	"regexp"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

const ciWorkflowFile = ".github/workflows/ci.yml"

// ciWorkflow is the part of the project's own workflow the test reads.
type ciWorkflow struct {
	Jobs map[string]struct {
		RunsOn   string `yaml:"runs-on"`
		Strategy struct {
			Matrix map[string][]string `yaml:"matrix"`
		} `yaml:"strategy"`
		Steps []struct {
			Run string `yaml:"run"`
		} `yaml:"steps"`
	} `yaml:"jobs"`
}

// readmeTestCommand is the README's test command: the `make` line of its set-up block that runs the tests.
func readmeTestCommand(t *testing.T) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^(make test)\b`).FindStringSubmatch(string(readRepoFile(t, "README.md")))
	if m == nil {
		t.Fatal("README.md has no `make test` line in its set-up block")
	}
	return m[1]
}

// TestCIWorkflow lints the project's own workflow with actionlint and checks that it runs the README's test
// command on Linux (through .ci/run, which installs the consumers first and ends with it and the long lane) and on macOS on
// both architectures, as the README says.
func TestCIWorkflow(t *testing.T) {
	src := string(readRepoFile(t, ciWorkflowFile))
	reportLint(t, lintRepo(t, map[string]string{"ci.yml": src}))

	var wf ciWorkflow
	if err := yaml.Unmarshal([]byte(src), &wf); err != nil {
		t.Fatalf("%s: %v", ciWorkflowFile, err)
	}
	testCmd := readmeTestCommand(t)
	// .ci/run ends with the README's test command and then the long lane (docs/architecture.md).
	if ci := string(readRepoFile(t, ".ci/run")); !strings.HasSuffix(strings.TrimSpace(ci), testCmd+"\nmake long") {
		t.Fatalf(".ci/run does not end with the README's test command %q and then `make long`", testCmd)
	}
	runners := map[string]bool{}
	for name, j := range wf.Jobs {
		labels := []string{j.RunsOn}
		if strings.Contains(j.RunsOn, "matrix.") {
			labels = j.Strategy.Matrix["runner"]
		}
		tests := false
		for _, s := range j.Steps {
			for _, line := range strings.Split(s.Run, "\n") {
				if l := strings.TrimSpace(line); l == testCmd || l == ".ci/run" {
					tests = true
				}
			}
		}
		if !tests {
			continue
		}
		for _, l := range labels {
			runners[l] = true
		}
		t.Logf("job %s runs %q on %v", name, testCmd, labels)
	}
	for _, want := range []string{"ubuntu-24.04", "macos-15", "macos-15-intel"} {
		if !runners[want] {
			t.Errorf("no job of %s runs %q on %s", ciWorkflowFile, testCmd, want)
		}
	}
	readme := string(readRepoFile(t, "README.md"))
	for _, want := range []string{"macos-15", "macos-15-intel", "ubuntu-24.04"} {
		if !strings.Contains(readme, want) {
			t.Errorf("README.md does not say that the tests run on %s", want)
		}
	}
}
