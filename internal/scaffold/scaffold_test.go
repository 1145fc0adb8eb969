package scaffold

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
	"gopkg.in/yaml.v3"

	"github.com/astrabox-dev/astrabox/internal/clauses"
	"github.com/astrabox-dev/astrabox/internal/conformance"
	"github.com/astrabox-dev/astrabox/internal/discovery"
)

// seamsDir is the kit's own astrabox package, as `astrabox sdk path` would give it.
func seamsDir(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "..", "harness", "python")
	if _, err := os.Stat(filepath.Join(dir, "astrabox", "seams.py")); err != nil {
		t.Fatalf("astrabox.seams not found: %v", err)
	}
	return dir
}

func scaffold(t *testing.T, o Options) *Result {
	t.Helper()
	res, err := Write(o)
	if err != nil {
		t.Fatalf("Write: %v", err)
	}
	return res
}

// runPython runs python with the kit's seams on PYTHONPATH inside dir and fails the test on a non-zero exit.
func runPython(t *testing.T, python, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command(python, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PYTHONPATH="+seamsDir(t), "PYTHONDONTWRITEBYTECODE=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s in %s: %v\n%s", python, strings.Join(args, " "), dir, err, out)
	}
	return string(out)
}

func TestSanitizeName(t *testing.T) {
	cases := map[string]string{
		"my-provider":           "my-provider",
		"My Provider":           "my-provider",
		"__Tools.v2__":          "tools.v2",
		"...":                   "provider",
		"":                      "provider",
		"élan vital!":           "lan-vital",
		"9lives":                "9lives",
		strings.Repeat("a", 80): strings.Repeat("a", 63),
	}
	for in, want := range cases {
		got := SanitizeName(in)
		if got != want {
			t.Errorf("SanitizeName(%q) = %q, want %q", in, got, want)
		}
		if !ValidName(got) {
			t.Errorf("SanitizeName(%q) = %q is not a valid name", in, got)
		}
	}
}

func TestDerivedNames(t *testing.T) {
	cases := []struct{ name, pkg, class string }{
		{"tools", "tools_provider", "ToolsProvider"},
		{"my-tools.v2", "my_tools_v2_provider", "MyToolsV2Provider"},
		{"reference-provider", "reference_provider", "ReferenceProvider"},
		{"9lives", "p9lives_provider", "Provider9livesProvider"},
	}
	for _, c := range cases {
		if got := PackageFor(c.name); got != c.pkg {
			t.Errorf("PackageFor(%q) = %q, want %q", c.name, got, c.pkg)
		}
		if !ValidPackage(PackageFor(c.name)) {
			t.Errorf("PackageFor(%q) is not a valid package", c.name)
		}
		if got := ClassFor(c.name); got != c.class {
			t.Errorf("ClassFor(%q) = %q, want %q", c.name, got, c.class)
		}
	}
	for _, bad := range []string{"class", "astrabox", "tests", "1abc", "my-pkg", ""} {
		if ValidPackage(bad) {
			t.Errorf("ValidPackage(%q) = true", bad)
		}
	}
}

func TestResolveRejectsBadNames(t *testing.T) {
	_, err := Resolve(Options{Dir: t.TempDir(), Name: "My Provider"})
	var inv *InvalidError
	if !errors.As(err, &inv) || inv.Suggestion != "my-provider" {
		t.Fatalf("bad name: got %v", err)
	}
	_, err = Resolve(Options{Dir: t.TempDir(), Package: "import"})
	if !errors.As(err, &inv) || inv.What != "package name" {
		t.Fatalf("bad package: got %v", err)
	}
}

func TestScaffoldNamesFromDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "Acme Tools")
	res := scaffold(t, Options{Dir: dir})
	if res.Name != "acme-tools" || res.Package != "acme_tools_provider" || res.Class != "AcmeToolsProvider" {
		t.Fatalf("derived %q %q %q", res.Name, res.Package, res.Class)
	}
	want := []string{"pyproject.toml", "README.md", "src/acme_tools_provider/__init__.py",
		"src/acme_tools_provider/provider.py", "tests/__init__.py", "tests/test_provider.py",
		".github/workflows/astrabox.yml", ".gitignore"}
	if strings.Join(res.Files, ",") != strings.Join(want, ",") {
		t.Fatalf("files %v, want %v", res.Files, want)
	}
	for _, f := range want {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("missing %s: %v", f, err)
		}
	}
}

func TestDiscoveryFindsTheEntryPoint(t *testing.T) {
	for _, name := range []string{"tools", "acme.tools_v2"} {
		dir := t.TempDir()
		scaffold(t, Options{Dir: dir, Name: name})
		p, err := discovery.LoadProject(dir)
		if err != nil {
			t.Fatalf("%s: LoadProject: %v", name, err)
		}
		if len(p.Declarations) != 1 {
			t.Fatalf("%s: declarations %+v", name, p.Declarations)
		}
		d := p.Declarations[0]
		wantRef := PackageFor(name) + ".provider:" + ClassFor(name)
		if d.Name != name || d.Value != wantRef {
			t.Errorf("%s: declaration %q = %q, want %q", name, d.Name, d.Value, wantRef)
		}
		if file, _, ok := p.FindModule(PackageFor(name) + ".provider"); !ok || !strings.HasSuffix(file, "provider.py") {
			t.Errorf("%s: provider module not found in code roots %v", name, p.CodeRoots)
		}
		if p.Settings != nil {
			t.Errorf("%s: a live [tool.astrabox] table: %v", name, p.Settings)
		}
		if _, err := conformance.ParseSettings(p.Settings, p.SettingsFile, dir); err != nil {
			t.Errorf("%s: settings: %v", name, err)
		}
	}
}

// TestCommentedSettingsAreValid uncomments every example setting and checks the kit accepts them.
func TestCommentedSettingsAreValid(t *testing.T) {
	_, files, err := Render(mustResolve(t, Options{Dir: t.TempDir(), Name: "tools"}))
	if err != nil {
		t.Fatal(err)
	}
	text := string(files["pyproject.toml"])
	_, after, ok := strings.Cut(text, "[tool.astrabox]\n")
	if !ok {
		t.Fatal("no [tool.astrabox] table")
	}
	var lines []string
	n := 0
	for _, line := range strings.Split(after, "\n") {
		if rest, ok := strings.CutPrefix(line, "# "); ok && (strings.Contains(rest, " = ") || strings.HasPrefix(rest, "[")) {
			lines = append(lines, rest)
			n++
		}
	}
	if n < 8 {
		t.Fatalf("only %d commented settings found:\n%s", n, after)
	}
	var doc struct {
		Tool struct {
			Astrabox map[string]any `toml:"astrabox"`
		} `toml:"tool"`
	}
	src := "[tool.astrabox]\n" + strings.Join(lines, "\n") + "\n"
	if _, err := toml.Decode(src, &doc); err != nil {
		t.Fatalf("uncommented settings are not TOML: %v\n%s", err, src)
	}
	s, err := conformance.ParseSettings(doc.Tool.Astrabox, "pyproject.toml", t.TempDir())
	if err != nil {
		t.Fatalf("uncommented settings rejected: %v\n%s", err, src)
	}
	if len(s.SecretFields) != 1 || s.Config == nil || len(s.Skip) != 1 {
		t.Errorf("settings not all read: %+v", s)
	}
}

func mustResolve(t *testing.T, o Options) Options {
	t.Helper()
	o, err := Resolve(o)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func TestRefusesToOverwrite(t *testing.T) {
	dir := t.TempDir()
	mine := filepath.Join(dir, "pyproject.toml")
	if err := os.WriteFile(mine, []byte("# mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Write(Options{Dir: dir, Name: "tools"})
	var ex *ExistsError
	if !errors.As(err, &ex) || len(ex.Paths) != 1 || ex.Paths[0] != mine {
		t.Fatalf("got %v, want an ExistsError naming %s", err, mine)
	}
	if !strings.Contains(err.Error(), mine) || !strings.Contains(err.Error(), "--force") {
		t.Errorf("message %q", err)
	}
	if got, _ := os.ReadFile(mine); string(got) != "# mine\n" {
		t.Errorf("pyproject.toml was changed: %q", got)
	}
	// Nothing else was written either.
	if _, err := os.Stat(filepath.Join(dir, "src")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("src/ written despite the refusal: %v", err)
	}

	res, err := Write(Options{Dir: dir, Name: "tools", Force: true})
	if err != nil {
		t.Fatalf("--force: %v", err)
	}
	if len(res.Overwritten) != 1 || res.Overwritten[0] != "pyproject.toml" {
		t.Errorf("overwritten %v", res.Overwritten)
	}
	got, _ := os.ReadFile(mine)
	if !strings.Contains(string(got), EntryPointGroup) {
		t.Errorf("pyproject.toml not replaced:\n%s", got)
	}
}

func TestRefusesAFileAsDirectory(t *testing.T) {
	f := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(f, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Write(Options{Dir: f, Name: "tools", Force: true}); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Fatalf("got %v", err)
	}
}

func TestWorkflowPinsTheActionAndGuardsForks(t *testing.T) {
	commit := strings.Repeat("ab", 20)
	for _, c := range []struct{ version, commit, want string }{
		{"", "", "@main"}, {"(devel)", commit, "@" + commit}, {"v1.4.0", commit, "@v1.4.0"}, {"v1.4.0+dirty", "", "@main"},
	} {
		_, files, err := Render(mustResolve(t, Options{Dir: t.TempDir(), Name: "tools", KitVersion: c.version, KitCommit: c.commit}))
		if err != nil {
			t.Fatal(err)
		}
		var wf struct {
			Jobs map[string]struct {
				Steps []struct {
					Run  string            `yaml:"run"`
					Uses string            `yaml:"uses"`
					With map[string]string `yaml:"with"`
				} `yaml:"steps"`
			} `yaml:"jobs"`
		}
		text := string(files[".github/workflows/astrabox.yml"])
		if err := yaml.Unmarshal([]byte(text), &wf); err != nil {
			t.Fatalf("workflow is not YAML: %v", err)
		}
		var action map[string]string
		var runs []string
		for _, job := range wf.Jobs {
			for _, s := range job.Steps {
				runs = append(runs, s.Run)
				if strings.HasPrefix(s.Uses, "astrabox-dev/astrabox@") {
					if s.Uses != "astrabox-dev/astrabox"+c.want {
						t.Errorf("version %q commit %q: uses %s, want %s", c.version, c.commit, s.Uses, c.want)
					}
					action = s.With
				}
			}
		}
		if action == nil || action["project"] != "." || !strings.Contains(action["upload-sarif"], "head.repo.full_name == github.repository") {
			t.Errorf("the action step does not run the project or guard forks: %v", action)
		}
		if strings.Contains(text, "@latest") {
			t.Errorf("the workflow installs @latest:\n%s", text)
		}
		if floating := c.want == "@main"; floating != strings.Contains(text, "replace @main with a release tag or a commit") {
			t.Errorf("version %q commit %q: the workflow's note on a moving pin is wrong:\n%s", c.version, c.commit, text)
		}
		if wantVersion := strings.TrimPrefix(c.want, "@"); strings.HasPrefix(wantVersion, "v") != (action["version"] == wantVersion) {
			t.Errorf("version %q commit %q: the action's version input is %q; a release pin must download that release", c.version, c.commit, action["version"])
		}
		install := strings.Index(text, "python -m pip install -e .")
		if install < 0 || install > strings.Index(text, "uses: astrabox-dev/astrabox@") ||
			!strings.Contains(text, "python -m pip install -r requirements.txt") {
			t.Errorf("the workflow does not install the project and its requirements before the suite:\n%s", text)
		}
		if all := strings.Join(runs, "\n"); !strings.Contains(all, `sdk path)" python3 -m unittest`) {
			t.Errorf("workflow does not run the unit tests with python3:\n%s", all)
		}
	}
}

// TestFloatingPinIsReported: a kit with neither version nor commit tells its caller the pin moves; a
// released one does not.
func TestFloatingPinIsReported(t *testing.T) {
	if res := scaffold(t, Options{Dir: t.TempDir(), Name: "tools"}); !res.FloatingPin {
		t.Error("a kit without version or commit wrote a workflow pinned to main without saying so")
	}
	if res := scaffold(t, Options{Dir: t.TempDir(), Name: "tools", KitVersion: "v1.4.0"}); res.FloatingPin {
		t.Error("a released kit's pin reported as floating")
	}
}

// TestMonorepoWorkflowGoesToTheRepositoryRoot: in a subdirectory of a git repository the workflow is
// written to the root's .github/workflows, where GitHub reads it, with the project's path.
func TestMonorepoWorkflowGoesToTheRepositoryRoot(t *testing.T) {
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "providers", "tools")
	res := scaffold(t, Options{Dir: dir, Name: "tools"})
	want := filepath.Join(root, ".github", "workflows", "astrabox-tools.yml")
	if res.Workflow != want || res.RepoRoot != root {
		t.Fatalf("workflow %s (root %s), want %s", res.Workflow, res.RepoRoot, want)
	}
	wf, err := os.ReadFile(want)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(wf), "project: providers/tools") || !strings.Contains(string(wf), "working-directory: providers/tools") {
		t.Errorf("workflow does not name the project's path:\n%s", wf)
	}
	if _, err := os.Stat(filepath.Join(dir, ".github")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a .github directory was written in the subdirectory, where GitHub never reads it")
	}
}

func TestGitignoreIsCreatedOrAppended(t *testing.T) {
	dir := t.TempDir()
	scaffold(t, Options{Dir: dir, Name: "tools"})
	if got, _ := os.ReadFile(filepath.Join(dir, ".gitignore")); !strings.Contains(string(got), "\n.astrabox/\n") {
		t.Errorf(".gitignore = %q", got)
	}
	dir = t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, ".gitignore"), []byte("*.pyc"), 0o644); err != nil {
		t.Fatal(err)
	}
	res := scaffold(t, Options{Dir: dir, Name: "tools"})
	got, _ := os.ReadFile(filepath.Join(dir, ".gitignore"))
	if !res.GitignoreAppended || !strings.HasPrefix(string(got), "*.pyc\n") || !strings.Contains(string(got), ".astrabox/") {
		t.Errorf("existing .gitignore not appended to: %q", got)
	}
	again, err := Write(Options{Dir: dir, Name: "tools", Force: true})
	if err != nil {
		t.Fatal(err)
	}
	if now, _ := os.ReadFile(filepath.Join(dir, ".gitignore")); string(now) != string(got) || again.GitignoreAppended {
		t.Errorf("a .gitignore that ignores .astrabox/ was changed: %q", now)
	}
}

func TestSettingsTableIsCommentedOut(t *testing.T) {
	_, files, err := Render(mustResolve(t, Options{Dir: t.TempDir(), Name: "tools"}))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if _, err := toml.Decode(string(files["pyproject.toml"]), &doc); err != nil {
		t.Fatal(err)
	}
	if tool, ok := doc["tool"].(map[string]any); ok {
		if _, live := tool["astrabox"]; live {
			t.Error("pyproject.toml has a live [tool.astrabox] table: an astrabox.toml beside it would be ignored")
		}
	}
}

func TestProviderStubsNameTheirClauses(t *testing.T) {
	_, files, err := Render(mustResolve(t, Options{Dir: t.TempDir(), Name: "tools"}))
	if err != nil {
		t.Fatal(err)
	}
	src := string(files["src/tools_provider/provider.py"])
	known := map[string]bool{}
	for _, c := range clauses.All() {
		known[c.ID] = true
	}
	for _, cb := range []string{"plan", "synchronize", "recover", "prepare_session", "prepare_turn", "read_user_actions", "perform_user_action"} {
		_, body, ok := strings.Cut(src, "def "+cb+"(")
		if !ok {
			t.Fatalf("no %s in provider.py", cb)
		}
		body, _, _ = strings.Cut(body, "\n    def ")
		body, _, _ = strings.Cut(body, "\n    async def ")
		ids := clauseIDs(body)
		if len(ids) == 0 {
			t.Errorf("%s names no clause", cb)
		}
		for _, id := range ids {
			if !known[id] {
				t.Errorf("%s names %s, which is not a clause ID", cb, id)
			}
			if _, ok := conformance.Lookup(id); !ok {
				t.Errorf("%s names %s, which `astrabox conformance explain` does not know", cb, id)
			}
		}
	}
}

// clauseIDs finds words like PLAN-NO-IO in text.
func clauseIDs(text string) []string {
	var ids []string
	for _, w := range strings.FieldsFunc(text, func(r rune) bool { return r == ' ' || r == ',' || r == ':' || r == '\n' || r == '(' || r == ')' }) {
		if strings.Contains(w, "-") && strings.ToUpper(w) == w && strings.IndexFunc(w, func(r rune) bool { return r >= 'A' && r <= 'Z' }) == 0 {
			ids = append(ids, strings.TrimRight(w, "."))
		}
	}
	return ids
}

// TestGeneratedUnitTestsPass runs the generated unittest suite on every installed CPython 3.9 to 3.13
// (python3 at least), with the kit's seams on PYTHONPATH as `astrabox sdk path` would give them.
func TestGeneratedUnitTestsPass(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python (skipped under -short)")
	}
	dir := t.TempDir()
	res := scaffold(t, Options{Dir: dir, Name: "acme.tools"})
	pythons := []string{"python3"}
	var matches []string
	for _, v := range []string{"3.9", "3.10", "3.11", "3.12", "3.13"} {
		m, _ := filepath.Glob("/root/.pyenv/versions/" + v + ".*/bin/python3")
		matches = append(matches, m...)
	}
	pythons = append(pythons, matches...)
	for _, py := range pythons {
		t.Run(filepath.Base(filepath.Dir(filepath.Dir(py))), func(t *testing.T) {
			if _, err := exec.LookPath(py); err != nil {
				t.Skipf("%s not installed", py)
			}
			out := runPython(t, py, dir, "-m", "unittest", "-v")
			if !strings.Contains(out, "Ran 6 tests") || !strings.Contains(out, "OK") {
				t.Errorf("unexpected unittest output:\n%s", out)
			}
		})
	}
	// The provider module imports and subclasses RuntimePreparationProvider, with the scaffolded name and
	// the platform's default behaviour.
	check := `import asyncio, sys
sys.path.insert(0, "src")
from astrabox.seams import RuntimePreparationProvider, RuntimePreparationPlan, RuntimeMaterials, SessionUserActionState
from ` + res.Package + `.provider import ` + res.Class + ` as P
assert issubclass(P, RuntimePreparationProvider), P.__mro__
assert P.name == "acme.tools", P.name
p = P()
assert p.plan(config={}) == RuntimePreparationPlan()
assert asyncio.run(p.prepare_session(context=None)) == RuntimeMaterials()
assert asyncio.run(p.prepare_turn(context=None)) == RuntimeMaterials()
assert asyncio.run(p.read_user_actions(context=None)) == SessionUserActionState(ready=True)
assert asyncio.run(p.recover(operation=None)) is False
assert asyncio.run(p.synchronize(context=None)) is None
for name in ("plan", "synchronize", "recover", "prepare_session", "prepare_turn", "read_user_actions", "perform_user_action"):
    assert name in vars(P), name
print("ok")
`
	if out := runPython(t, "python3", dir, "-c", check); strings.TrimSpace(out) != "ok" {
		t.Errorf("provider check said %q", out)
	}
}

// TestGeneratedUnitTestsExplainAMissingSDK checks the message a user gets without `astrabox sdk path`.
func TestGeneratedUnitTestsExplainAMissingSDK(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python (skipped under -short)")
	}
	dir := t.TempDir()
	scaffold(t, Options{Dir: dir, Name: "tools"})
	cmd := exec.Command("python3", "-m", "unittest")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PYTHONPATH=", "PYTHONDONTWRITEBYTECODE=1")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Skip("astrabox.seams is importable without PYTHONPATH here (installed site-wide)")
	}
	if !strings.Contains(string(out), `PYTHONPATH="$(astrabox sdk path)"`) {
		t.Errorf("the failure does not say how to fix it:\n%s", out)
	}
}

func TestSecondRunNamesEveryExistingFile(t *testing.T) {
	dir := t.TempDir()
	first := scaffold(t, Options{Dir: dir, Name: "tools"})
	_, err := Write(Options{Dir: dir, Name: "tools"})
	var ex *ExistsError
	// .gitignore is merged into, never refused.
	if !errors.As(err, &ex) || len(ex.Paths) != len(first.Files)-1 {
		t.Fatalf("got %v, want all %d files but .gitignore named", err, len(first.Files)-1)
	}
	for _, rel := range first.Files {
		if rel == ".gitignore" {
			continue
		}
		if !strings.Contains(err.Error(), filepath.Join(dir, filepath.FromSlash(rel))) {
			t.Errorf("message does not name %s:\n%v", rel, err)
		}
	}
}
