package recipes

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

const preCommitFile = ".pre-commit-hooks.yaml"

// preCommitHook is one hook of .pre-commit-hooks.yaml; unknown keys are refused so that a typo cannot hide.
type preCommitHook struct {
	ID                string   `yaml:"id"`
	Name              string   `yaml:"name"`
	Description       string   `yaml:"description"`
	Entry             string   `yaml:"entry"`
	Language          string   `yaml:"language"`
	PassFilenames     *bool    `yaml:"pass_filenames"`
	Files             string   `yaml:"files"`
	Exclude           string   `yaml:"exclude"`
	Args              []string `yaml:"args"`
	RequireSerial     bool     `yaml:"require_serial"`
	Stages            []string `yaml:"stages"`
	MinimumPreCommit  string   `yaml:"minimum_pre_commit_version"`
	AlwaysRun         bool     `yaml:"always_run"`
	Verbose           bool     `yaml:"verbose"`
	Types             []string `yaml:"types"`
	TypesOr           []string `yaml:"types_or"`
	LanguageVersion   string   `yaml:"language_version"`
	AdditionalDepends []string `yaml:"additional_dependencies"`
}

func readHook(t testing.TB) preCommitHook {
	t.Helper()
	var hooks []preCommitHook
	dec := yaml.NewDecoder(strings.NewReader(string(readRepoFile(t, preCommitFile))))
	dec.KnownFields(true)
	if err := dec.Decode(&hooks); err != nil {
		t.Fatalf("%s: %v", preCommitFile, err)
	}
	for _, h := range hooks {
		if h.ID == "astrabox-conformance" {
			return h
		}
	}
	t.Fatalf("%s has no astrabox-conformance hook", preCommitFile)
	return preCommitHook{}
}

func TestPreCommitHookDefinition(t *testing.T) {
	h := readHook(t)
	// golang: pre-commit builds the kit from the hook repository, so a clean machine needs nothing installed.
	if h.Name == "" || h.Language != "golang" || h.PassFilenames == nil || *h.PassFilenames {
		t.Errorf("hook: name %q, language %q, pass_filenames %v; want a name, golang and false", h.Name, h.Language, h.PassFilenames)
	}
	if !strings.HasPrefix(h.Entry, "astrabox conformance run") {
		t.Errorf("entry %q does not run the conformance suite", h.Entry)
	}
	// pre-commit matches files with Python's re.search; this pattern uses nothing Go's RE2 reads differently.
	re, err := regexp.Compile(h.Files)
	if err != nil {
		t.Fatalf("files %q: %v", h.Files, err)
	}
	for _, p := range []string{"pyproject.toml", "svc/pyproject.toml", "setup.cfg", "src/acme/provider.py", "provider.py"} {
		if !re.MatchString(p) {
			t.Errorf("files %q does not match %s", h.Files, p)
		}
	}
	for _, p := range []string{"README.md", "docs/pyproject.toml.md", "my-pyproject.toml", "src/acme/data.json", "provider.pyc"} {
		if re.MatchString(p) {
			t.Errorf("files %q matches %s", h.Files, p)
		}
	}
}

// testPreCommit runs the hook's entry the way pre-commit runs it once the kit is built (the golang hook puts
// the binary on PATH), with
// pass_filenames: false (the entry split like a shell would, then args), at the root of the provider's
// repository.
func testPreCommit(t *testing.T, bin, project string, wantCode int) {
	h := readHook(t)
	ws := workspace(t)
	argv := append(strings.Fields(h.Entry), h.Args...)
	res := run(t, filepath.Join(ws, project), baseEnv(bin), argv...)
	defer dump(t, "pre-commit hook", res)
	if res.code != wantCode {
		t.Fatalf("hook exit status %d, want %d", res.code, wantCode)
	}
	want := "PASSED"
	if wantCode == 1 {
		want = "LEAK-LOG"
	}
	if !strings.Contains(res.output, want) {
		t.Errorf("hook output does not mention %s", want)
	}
}
