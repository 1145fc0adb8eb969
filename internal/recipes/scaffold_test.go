package recipes

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/astrabox-dev/astrabox/internal/scaffold"

	"github.com/astrabox-dev/astrabox/internal/testutil"
)

// scaffoldWorkflow renders the workflow `astrabox init` writes.
func scaffoldWorkflow(t *testing.T) string {
	t.Helper()
	o, err := scaffold.Resolve(scaffold.Options{Dir: t.TempDir(), Name: "tools"})
	if err != nil {
		t.Fatal(err)
	}
	_, files, err := scaffold.Render(o)
	if err != nil {
		t.Fatal(err)
	}
	return string(files[".github/workflows/astrabox.yml"])
}

// TestScaffoldWorkflowLintsAgainstTheAction lints the workflow `astrabox init` writes with actionlint,
// against this repository's action.yml (so its inputs and outputs exist).
func TestScaffoldWorkflowLintsAgainstTheAction(t *testing.T) {
	wf := scaffoldWorkflow(t)
	if !remoteAction.MatchString(wf) {
		t.Fatalf("the init workflow does not use the action:\n%s", wf)
	}
	reportLint(t, lintRepo(t, map[string]string{"init.yml": remoteAction.ReplaceAllString(wf, "./")}))
}

var usesPin = regexp.MustCompile(`uses: ([\w.-]+/[\w./-]+)@(\S+)`)

// TestActionPinsAgree: every third-party action is pinned to the same version in action.yml, the example
// workflow and the workflow `astrabox init` writes.
func TestActionPinsAgree(t *testing.T) {
	sources := map[string]string{
		"action.yml":                      string(readRepoFile(t, "action.yml")),
		"examples/ci/github-workflow.yml": string(readRepoFile(t, "examples/ci/github-workflow.yml")),
		"astrabox init's workflow":        scaffoldWorkflow(t),
	}
	pins := map[string]map[string][]string{} // action -> pin -> where
	for where, text := range sources {
		for _, m := range usesPin.FindAllStringSubmatch(text, -1) {
			if m[1] == "astrabox-dev/astrabox" {
				continue
			}
			if pins[m[1]] == nil {
				pins[m[1]] = map[string][]string{}
			}
			pins[m[1]][m[2]] = append(pins[m[1]][m[2]], where)
		}
	}
	if len(pins) < 4 {
		t.Fatalf("found pins of only %v", pins)
	}
	for action, by := range pins {
		if len(by) > 1 {
			t.Errorf("%s is pinned differently: %v", action, by)
		}
	}
}

// TestPreCommitFilesPatternCoversTheProject: the hook runs when a Python file or any file that declares or
// configures the provider is staged.
func TestPreCommitFilesPatternCoversTheProject(t *testing.T) {
	h := readHook(t)
	re, err := regexp.Compile(h.Files)
	if err != nil {
		t.Fatalf("files pattern %q: %v", h.Files, err)
	}
	for _, f := range []string{"src/acme/provider.py", "pyproject.toml", "setup.cfg", "setup.py", "astrabox.toml", "providers/acme/astrabox.toml", "providers/acme/setup.py"} {
		if !re.MatchString(f) {
			t.Errorf("files pattern %q does not match %s", h.Files, f)
		}
	}
	for _, f := range []string{"README.md", "docs/setup.md"} {
		if re.MatchString(f) {
			t.Errorf("files pattern %q matches %s", h.Files, f)
		}
	}
	if h.MinimumPreCommit != "" {
		t.Errorf("minimum_pre_commit_version %q: nothing in the hook needs it, and it refuses older pre-commit releases (Debian 12 has 3.0.4)", h.MinimumPreCommit)
	}
}

// TestPreCommitHookRunsUnderPreCommit runs the hook with the machine's pre-commit (Debian's package under
// CI), through `pre-commit try-repo` against a clean clone of this repository's HEAD (only what is
// committed), with no astrabox on PATH: pre-commit must build the kit from the hook repository alone
// (language: golang). It runs in a git repository holding a copy of the reference provider (the hook must
// pass) and of the leak-log provider (it must fail and name LEAK-LOG); both share one pre-commit home, so
// the kit is built once, by the first (leak-log). `make test` runs the leak-log one; the long lane both.
func TestPreCommitHookRunsUnderPreCommit(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python (skipped under -short)")
	}
	needTools(t, "git", "python3", "go")
	preCommit, err := exec.LookPath("pre-commit")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("pre-commit is not installed (CI must have it: apt-get install pre-commit)")
		}
		t.Skip("pre-commit is not installed; apt-get install pre-commit to run the hook for real")
	}
	clone := filepath.Join(t.TempDir(), "astrabox")
	head := strings.TrimSpace(run(t, repoRoot(t), baseEnv(), "git", "rev-parse", "HEAD").output)
	for _, argv := range [][]string{{"git", "clone", "-q", "--no-checkout", repoRoot(t), clone}, {"git", "-C", clone, "checkout", "-q", head}} {
		if res := run(t, repoRoot(t), baseEnv(), argv...); res.code != 0 {
			t.Fatalf("%v: %s", argv, res.output)
		}
	}
	gomodcache := strings.TrimSpace(run(t, repoRoot(t), baseEnv(), "go", "env", "GOMODCACHE").output)
	home := t.TempDir()
	for _, c := range []struct {
		project string
		code    int
		want    string
	}{{leakLogProject, 1, "LEAK-LOG"}, {referenceProject, 0, "Passed"}} {
		t.Run(filepath.Base(c.project), func(t *testing.T) {
			if c.project == referenceProject {
				// The hook is installed and built by the first run; its exit 0 mapping is TestRecipesRun's
				// pre-commit/minimal too, so `make test` keeps the failing run under pre-commit only.
				testutil.LongLane(t, "the passing project under pre-commit too")
			}
			repo := t.TempDir()
			if err := copyTree(filepath.Join(repoRoot(t), c.project), repo); err != nil {
				t.Fatal(err)
			}
			// The leak-log fixture reaches the reference provider by a relative python-path: make it absolute.
			manifest := filepath.Join(repo, "pyproject.toml")
			data, err := os.ReadFile(manifest)
			if err != nil {
				t.Fatal(err)
			}
			abs := strings.ReplaceAll(string(data), "../../../../examples/providers/reference/src", filepath.ToSlash(filepath.Join(repoRoot(t), referenceProject, "src")))
			if err := os.WriteFile(manifest, []byte(abs), 0o644); err != nil {
				t.Fatal(err)
			}
			// No astrabox on PATH (baseEnv drops any directory holding one); the module cache is shared so that the
			// build needs no download. pre-commit builds in a copy at a random path, and a build's cache keys hold
			// the package directories unless -trimpath: with it (and CGO_ENABLED=0), the hook's `go install`
			// compiles what TestActionDownloadsTheRelease's `make dist` (the same flags) already compiled, instead
			// of every package of the module again. It is still pre-commit that builds the kit, from the clone.
			env := append(baseEnv(), "PRE_COMMIT_HOME="+home, "GOMODCACHE="+gomodcache, "GOFLAGS=-modcacherw -trimpath", "CGO_ENABLED=0", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.invalid",
				"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.invalid", "GIT_CONFIG_GLOBAL=/dev/null")
			for _, argv := range [][]string{{"git", "init", "-q"}, {"git", "add", "-A"}} {
				if res := run(t, repo, env, argv...); res.code != 0 {
					t.Fatalf("%v: %s", argv, res.output)
				}
			}
			if p := lookPathIn("astrabox", env); p != "astrabox" {
				t.Fatalf("astrabox is on the hook's PATH (%s): the test would not show that pre-commit builds it", p)
			}
			res := run(t, repo, env, preCommit, "try-repo", clone, "astrabox-conformance", "--all-files", "--verbose")
			if res.code != c.code || !strings.Contains(res.output, c.want) {
				t.Errorf("%s: pre-commit exit %d (want %d), output lacks %q:\n%s", c.project, res.code, c.code, c.want, res.output)
			}
		})
	}
}
