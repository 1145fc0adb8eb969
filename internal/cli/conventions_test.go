package cli

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/astrabox-dev/astrabox/internal/report"
	"github.com/astrabox-dev/astrabox/internal/term"
)

// runWidth runs the command line with Out fitted to width columns.
func runWidth(t *testing.T, width int, args ...string) (int, string, string) {
	t.Helper()
	skipIfStartsPython(t, args)
	io, out, errb := term.Test()
	io.Width = width
	f := &Factory{IO: io, Getenv: func(k string) string { return os.Getenv(k) }, Version: "test"}
	code := Run(f, args)
	return code, out.String(), errb.String()
}

func TestProvidersIsASmokeCheck(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python")
	}
	if code, out, stderr := run(t, "providers", "--project", repoPath("examples/providers/reference"), "--python", "python3"); code != 0 {
		t.Errorf("reference: exit %d\n%s\n%s", code, out, stderr)
	}
	code, out, stderr := run(t, "providers", "--project", repoPath("testdata/providers/broken/ep-subclass"), "--python", "python3")
	if code != ExitUndecided || !strings.Contains(stderr, "is not a RuntimePreparationProvider subclass") || !strings.Contains(out, "subclass of RuntimePreparationProvider: no") {
		t.Errorf("ep-subclass: exit %d\n%s\n%s", code, out, stderr)
	}
	code, _, stderr = run(t, "providers", "--project", repoPath("testdata/providers/broken/ep-subclass"), "--python", "python3", "--format", "json")
	if code != ExitUndecided {
		t.Errorf("ep-subclass --format json: exit %d\n%s", code, stderr)
	}
}

func TestColorFlag(t *testing.T) {
	for mode, want := range map[string]bool{"always": true, "never": false, "AUTO": false} {
		code, out, stderr := run(t, "conformance", "list", "--color", mode)
		if code != 0 || strings.Contains(out, "\x1b[") != want {
			t.Errorf("--color %s: exit %d, escapes %v\n%s", mode, code, strings.Contains(out, "\x1b["), stderr)
		}
	}
	if code, _, stderr := run(t, "conformance", "list", "--color", "sometimes"); code != ExitUndecided || !strings.Contains(stderr, `--color "sometimes": use auto, always, never`) {
		t.Errorf("bad --color: exit %d %s", code, stderr)
	}
}

// TestHelpEnvironmentListsEveryVariableRead scans the kit's Go source for environment variables read by name
// (Getenv, getenv and LookupEnv calls with a literal, and constants whose name ends in Env) and requires
// each in `astrabox help environment`. Test support (internal/testutil, whose ASTRABOX_LONG picks the test
// lane) and the maintainer tools are not the kit.
func TestHelpEnvironmentListsEveryVariableRead(t *testing.T) {
	code, out, _ := run(t, "help", "environment")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	read := map[string]string{}
	fset := token.NewFileSet()
	_ = filepath.WalkDir(repoPath("internal"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") || strings.Contains(p, "/tools/") || strings.Contains(p, "/testutil/") {
			return nil
		}
		file, err := parser.ParseFile(fset, p, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			if call, ok := n.(*ast.CallExpr); ok && len(call.Args) == 1 {
				name := ""
				switch fn := call.Fun.(type) {
				case *ast.Ident:
					name = fn.Name
				case *ast.SelectorExpr:
					name = fn.Sel.Name
				}
				if lit, ok := call.Args[0].(*ast.BasicLit); ok && lit.Kind == token.STRING && (name == "Getenv" || name == "getenv" || name == "LookupEnv") {
					v, _ := strconv.Unquote(lit.Value)
					read[v] = fset.Position(lit.Pos()).String()
				}
			}
			if vs, ok := n.(*ast.ValueSpec); ok {
				for i, id := range vs.Names {
					if strings.HasSuffix(id.Name, "Env") && i < len(vs.Values) {
						if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
							v, _ := strconv.Unquote(lit.Value)
							read[v] = fset.Position(lit.Pos()).String()
						}
					}
				}
			}
			return true
		})
		return nil
	})
	for _, name := range []string{"GITHUB_WORKSPACE", "NO_COLOR", "ASTRABOX_PYTHON", "ASTRABOX_REAL_CLI"} {
		if _, ok := read[name]; !ok {
			t.Errorf("the scan did not find %s: it proves nothing", name)
		}
	}
	for name, where := range read {
		harness := false
		for _, p := range HarnessVariables {
			harness = harness || strings.HasPrefix(name, p)
		}
		if harness {
			continue
		}
		if !strings.Contains(out, "  "+name+" ") {
			t.Errorf("%s reads %s, which `astrabox help environment` does not list", where, name)
		}
	}
}

func TestListHasAClausesColumnAndFits(t *testing.T) {
	_, wide, _ := runWidth(t, 140, "conformance", "list")
	lines := strings.Split(wide, "\n")
	if !strings.Contains(lines[0], "CLAUSES") {
		t.Fatalf("no clauses column at 140 columns:\n%s", wide)
	}
	found := false
	for i, ln := range lines {
		if strings.HasPrefix(ln, "PLAN-STABLE ") {
			found = strings.Contains(ln, " PLAN-STABLE ") && strings.Contains(lines[i+1], "BOUND-GENERATION")
		}
	}
	if !found {
		t.Errorf("PLAN-STABLE's two clauses are not in the clauses column:\n%s", wide)
	}
	for _, width := range []int{60, 80} {
		_, out, _ := runWidth(t, width, "conformance", "list")
		for _, ln := range strings.Split(out, "\n") {
			if ansi.StringWidth(ln) > width {
				t.Errorf("width %d: line of %d columns: %q", width, ansi.StringWidth(ln), ln)
			}
		}
		if !strings.Contains(strings.Join(strings.Fields(out), " "), "clauses: PLAN-STABLE, BOUND-GENERATION") {
			t.Errorf("width %d: clauses missing:\n%s", width, out)
		}
	}
}

func TestExplainAndHelpWrapToTheTerminal(t *testing.T) {
	_, out, _ := runWidth(t, 60, "conformance", "explain", "LEAK-LOG")
	for _, ln := range strings.Split(out, "\n") {
		if !strings.HasPrefix(ln, "    ") && ansi.StringWidth(ln) > 60 {
			t.Errorf("explain: prose line of %d columns: %q", ansi.StringWidth(ln), ln)
		}
	}
	_, help, _ := runWidth(t, 60, "conformance", "run", "--help")
	section := ""
	for _, ln := range strings.Split(help, "\n") {
		if strings.HasSuffix(ln, ":") && !strings.HasPrefix(ln, " ") {
			section = ln
		}
		if section != "Examples:" && section != "Usage:" && ansi.StringWidth(ln) > 60 {
			t.Errorf("--help: line of %d columns in %q: %q", ansi.StringWidth(ln), section, ln)
		}
	}
}

func TestParserInternalsStayOutOfErrors(t *testing.T) {
	for _, args := range [][]string{
		{"conformance", "run", "--seed", "abc"},
		{"conformance", "explain"},
		{"conformance", "explain", "A", "B"},
		{"report", "merge"},
		{"simulate", "run"},
		{"conformance", "run", "a", "b"},
	} {
		code, _, stderr := run(t, args...)
		if code != ExitUndecided || strings.Contains(stderr, "strconv") || strings.Contains(stderr, "arg(s)") {
			t.Errorf("%v: exit %d, %q", args, code, stderr)
		}
	}
}

func TestExitPolicy(t *testing.T) {
	rep := func(statuses ...report.Status) *report.Report {
		r := &report.Report{}
		for _, s := range statuses {
			r.Results = append(r.Results, report.Result{Check: "X", Status: s})
		}
		return r
	}
	code := func(err error) int { return reportError(&strings.Builder{}, term.Styles{}, errOr(err)) }
	cases := []struct {
		r    *report.Report
		p    Policy
		want int
	}{
		{rep(report.StatusPassed, report.StatusWarning), Policy{}, 0},
		{rep(report.StatusPassed, report.StatusWarning), Policy{FailOn: FailOnWarning}, 1},
		{rep(report.StatusFailed), Policy{}, 1},
		{rep(report.StatusFlaky), Policy{ExitZero: true}, 0},
		{rep(report.StatusWarning), Policy{FailOn: FailOnWarning, ExitZero: true}, 0},
		{rep(report.StatusNotExercised), Policy{ExitZero: true}, 2},
		{rep(report.StatusNotExercised, report.StatusFailed), Policy{}, 1},
	}
	for i, c := range cases {
		if got := code(verdictError(c.r, c.p)); got != c.want {
			t.Errorf("case %d: exit %d, want %d", i, got, c.want)
		}
	}
	if _, err := parseFailOn("errors"); err == nil {
		t.Error("--fail-on errors accepted")
	}
}

// errOr maps a nil error to exit 0 for reportError, which only sees errors.
func errOr(err error) error {
	if err == nil {
		return &exitError{code: ExitOK}
	}
	return err
}

func TestExitZeroAndPathArgument(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python")
	}
	code, out, stderr := run(t, "conformance", "run", repoPath("testdata/providers/broken/leak-log"), "--python", "python3", "--exit-zero", "--format", "concise")
	if code != 0 || !strings.Contains(out, " LEAK-LOG ") {
		t.Errorf("--exit-zero on leak-log: exit %d\n%s\n%s", code, out, stderr)
	}
	code, _, stderr = run(t, "conformance", "run", "a", "--project", "b")
	if code != ExitUndecided || !strings.Contains(stderr, "the project is given twice") {
		t.Errorf("PROJECT and --project: exit %d %s", code, stderr)
	}
}

// TestProgressLineFitsTheTerminal: the exploration's progress line, about 87 columns, is cut to the width
// of stderr, so an 80-column terminal does not stack a new line per update; the carriage return and
// erase-line prefix stay.
func TestProgressLineFitsTheTerminal(t *testing.T) {
	var b strings.Builder
	w := fitLine{w: &b, width: 80}
	line := "\r\x1b[Kexplored 120/2000 scenarios · 3 failing · 41.7 scenarios/s · 5321 callbacks/s · 45s left"
	if n, err := w.Write([]byte(line)); err != nil || n != len(line) {
		t.Fatalf("write: %d, %v", n, err)
	}
	got := b.String()
	if !strings.HasPrefix(got, "\r\x1b[Kexplored 120/2000") || ansi.StringWidth(strings.TrimPrefix(got, "\r\x1b[K")) > 79 {
		t.Errorf("progress line %q (%d columns)", got, ansi.StringWidth(strings.TrimPrefix(got, "\r\x1b[K")))
	}
	b.Reset()
	short := "\r\x1b[Kexplored 1/2 scenarios"
	_, _ = (fitLine{w: &b, width: 80}).Write([]byte(short))
	if b.String() != short {
		t.Errorf("a line that fits was changed: %q", b.String())
	}
}

// TestConfigAndSetOverrideTheProjectSettings: --set and --config reach the run (the seed the report
// carries), and a bad override is exit 2 naming --set.
func TestConfigAndSetOverrideTheProjectSettings(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python")
	}
	// The smallest correct provider: what is proven is the settings' order, which no provider changes, and
	// its suite is the quickest to play (EP-* still runs the suite).
	project := repoPath("testdata/providers/correct/minimal")
	seedOf := func(args ...string) int64 {
		t.Helper()
		code, out, stderr := run(t, append([]string{"conformance", "run", project, "--python", "python3", "--check", "EP-*", "--format", "json"}, args...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d\n%s", args, code, stderr)
		}
		rep, err := report.ReadJSON(strings.NewReader(out))
		if err != nil {
			t.Fatal(err)
		}
		return rep.Seed
	}
	cfg := filepath.Join(t.TempDir(), "ci.toml")
	if err := os.WriteFile(cfg, []byte("seed = 11\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if s := seedOf("--set", "seed=7"); s != 7 {
		t.Errorf("--set seed=7: report seed %d", s)
	}
	if s := seedOf("--config", cfg); s != 11 {
		t.Errorf("--config: report seed %d", s)
	}
	if s := seedOf("--config", cfg, "--set", "seed=12"); s != 12 {
		t.Errorf("--config then --set: report seed %d", s)
	}
	code, _, stderr := run(t, "conformance", "run", project, "--python", "python3", "--set", "replicas=many")
	if code != ExitUndecided || !strings.Contains(stderr, "--set: [tool.astrabox] replicas") {
		t.Errorf("bad --set: exit %d %s", code, stderr)
	}
}

// TestInlineSuppression: the leak-log fixture with `# astrabox: ignore[LEAK-LOG] reason` on the line that
// logs the token passes (exit 0), and every report shows LEAK-LOG as skipped with the reason, never passed.
func TestInlineSuppression(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python")
	}
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(repoPath("testdata/providers/broken/leak-log"))); err != nil {
		t.Fatal(err)
	}
	manifest := filepath.Join(dir, "pyproject.toml")
	data, _ := os.ReadFile(manifest)
	abs := strings.ReplaceAll(string(data), "../../../../examples/providers/reference/src", filepath.ToSlash(repoPath("examples/providers/reference/src")))
	if err := os.WriteFile(manifest, []byte(abs), 0o644); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(dir, "broken_leak_log.py")
	code, out, _ := run(t, "conformance", "run", dir, "--python", "python3", "--format", "json")
	if code != ExitFailed {
		t.Fatalf("unsuppressed: exit %d, want 1", code)
	}
	unsuppressed, err := report.ReadJSON(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	failed := false
	for _, r := range unsuppressed.Results {
		failed = failed || (r.Check == "LEAK-LOG" && r.Status == report.StatusFailed)
	}
	if !failed {
		t.Fatal("unsuppressed: LEAK-LOG did not fail, so the suppression below proves nothing")
	}
	body, _ := os.ReadFile(src)
	marked := strings.Replace(string(body), "context.principal_id)\n", "context.principal_id)  # astrabox: ignore[LEAK-LOG] reviewed: the fixture's token\n", 1)
	if marked == string(body) {
		t.Fatal("could not mark the leaking line")
	}
	if err := os.WriteFile(src, []byte(marked), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := run(t, "conformance", "run", dir, "--python", "python3", "--format", "json")
	if code != 0 {
		t.Fatalf("suppressed: exit %d\n%s", code, stderr)
	}
	rep, err := report.ReadJSON(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Results {
		if r.Check == "LEAK-LOG" && (r.Status != report.StatusSkipped || !strings.Contains(r.Message, "suppressed at broken_leak_log.py:20: reviewed: the fixture's token")) {
			t.Errorf("LEAK-LOG: %s %q", r.Status, r.Message)
		}
	}
}

// TestFormatIsCaseInsensitiveEverywhere: every command's --format takes its names in any case.
func TestFormatIsCaseInsensitiveEverywhere(t *testing.T) {
	for _, args := range [][]string{{"conformance", "list", "--format", "JSON"}, {"version", "--format", "Json"}} {
		if code, out, stderr := run(t, args...); code != 0 || !strings.HasPrefix(strings.TrimSpace(out), "{") && !strings.HasPrefix(strings.TrimSpace(out), "[") {
			t.Errorf("%v: exit %d %q %s", args, code, out, stderr)
		}
	}
	if code, _, stderr := run(t, "version", "--format", "yaml"); code != ExitUndecided || !strings.Contains(stderr, `unknown format "yaml"; use text or json`) {
		t.Errorf("bad format: exit %d %s", code, stderr)
	}
}
