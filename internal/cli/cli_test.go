package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/astrabox-dev/astrabox/internal/conformance"
	"github.com/astrabox-dev/astrabox/internal/term"
)

func run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return runGetenv(t, func(k string) string {
		if k == "PATH" {
			return os.Getenv("PATH")
		}
		return ""
	}, args...)
}

func runGetenv(t *testing.T, getenv func(string) string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	skipIfStartsPython(t, args)
	io, out, errb := term.Test()
	f := &Factory{IO: io, Getenv: getenv, Version: "test"}
	code = Run(f, args)
	return code, out.String(), errb.String()
}

func repoPath(p string) string {
	abs, _ := filepath.Abs(filepath.Join("..", "..", p))
	return abs
}

func TestUnknownCommandSuggests(t *testing.T) {
	code, _, stderr := run(t, "conformence")
	if code != ExitUndecided {
		t.Fatalf("exit %d, want 2", code)
	}
	if !strings.Contains(stderr, "conformance") {
		t.Fatalf("no suggestion in %q", stderr)
	}
}

func TestUnknownFlagIsUsageError(t *testing.T) {
	code, _, stderr := run(t, "conformance", "run", "--nope")
	if code != ExitUndecided || !strings.Contains(stderr, "--nope") || !strings.Contains(stderr, "--help") {
		t.Fatalf("exit %d stderr %q", code, stderr)
	}
}

func TestExplainUnknownCheckSuggests(t *testing.T) {
	code, _, stderr := run(t, "conformance", "explain", "PLAN-STABEL")
	if code != ExitUndecided || !strings.Contains(stderr, "PLAN-STABLE") {
		t.Fatalf("exit %d stderr %q", code, stderr)
	}
}

func TestExplainKnownCheck(t *testing.T) {
	code, stdout, _ := run(t, "conformance", "explain", "plan-no-io")
	if code != 0 || !strings.Contains(stdout, "PLAN-NO-IO") || !strings.Contains(stdout, "Wrong") || !strings.Contains(stdout, "Right") {
		t.Fatalf("exit %d stdout %q", code, stdout)
	}
}

func TestListJSONShowsClauses(t *testing.T) {
	code, stdout, _ := run(t, "conformance", "list", "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	var rows []struct {
		ID      string   `json:"id"`
		Clauses []string `json:"clauses"`
		Kind    string   `json:"kind"`
	}
	if err := json.Unmarshal([]byte(stdout), &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) < 10 {
		t.Fatalf("only %d checks listed", len(rows))
	}
	kitRules := 0
	for _, r := range rows {
		isKit := r.Kind == string(conformance.KindKitRule)
		switch {
		case isKit != strings.HasPrefix(r.ID, conformance.KitRulePrefix):
			t.Errorf("check %s: kind %q does not match its ID", r.ID, r.Kind)
		case isKit:
			kitRules++
			if len(r.Clauses) != 0 {
				t.Errorf("kit rule %s names clauses %v", r.ID, r.Clauses)
			}
		case len(r.Clauses) == 0:
			t.Errorf("check %s lists no clause", r.ID)
		}
	}
	if kitRules == 0 {
		t.Error("no kit rule listed (KIT-EGRESS-UNDECLARED)")
	}
}

func TestBadCheckPatternIsUsageError(t *testing.T) {
	code, _, stderr := run(t, "conformance", "run", "--project", repoPath("examples/providers/reference"), "--check", "PLAN-NOIO")
	if code != ExitUndecided || !strings.Contains(stderr, "PLAN-NO-IO") {
		t.Fatalf("exit %d stderr %q", code, stderr)
	}
}

func TestMissingProjectIsExit2(t *testing.T) {
	code, _, stderr := run(t, "conformance", "run", "--project", filepath.Join(t.TempDir(), "nope"))
	if code != ExitUndecided || !strings.Contains(stderr, "--project") {
		t.Fatalf("exit %d stderr %q", code, stderr)
	}
}

func TestNoDeclarationGivesSnippet(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "pyproject.toml"), []byte("[project]\nname = \"empty\"\nversion = \"1\"\n"), 0o644)
	code, _, stderr := run(t, "conformance", "run", "--project", dir)
	if code != ExitUndecided || !strings.Contains(stderr, `[project.entry-points."astrabox.providers.runtime_preparation"]`) {
		t.Fatalf("exit %d stderr %q", code, stderr)
	}
}

func TestMalformedTOMLNamesLine(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "pyproject.toml"), []byte("[project]\nname = \"x\"\nversion = = 1\n"), 0o644)
	code, _, stderr := run(t, "conformance", "run", "--project", dir)
	if code != ExitUndecided || !strings.Contains(stderr, "pyproject.toml:3") {
		t.Fatalf("exit %d stderr %q", code, stderr)
	}
}

func TestSDKPathHoldsSeams(t *testing.T) {
	code, stdout, _ := run(t, "sdk", "path")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	if _, err := os.Stat(filepath.Join(strings.TrimSpace(stdout), "astrabox", "seams.py")); err != nil {
		t.Fatal(err)
	}
}

func TestVersionJSON(t *testing.T) {
	code, stdout, _ := run(t, "version", "--format", "json")
	var v map[string]any
	if code != 0 || json.Unmarshal([]byte(stdout), &v) != nil || v["go"] == "" {
		t.Fatalf("exit %d stdout %q", code, stdout)
	}
}

func TestBadScenarioFileIsExit2WithLine(t *testing.T) {
	p := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(p, []byte("name: bad\nsteps:\n  - op: cold_start\n    session: s1\n    agent: agent-1\n    principal: alice\n  - op: teleport\n"), 0o644)
	code, _, stderr := run(t, "simulate", "run", p, "--project", repoPath("examples/providers/reference"))
	if code != ExitUndecided || !strings.Contains(stderr, "bad.yaml:7") || !strings.Contains(stderr, "teleport") {
		t.Fatalf("exit %d stderr %q", code, stderr)
	}
}

func TestNearMissGroupOnlyFailsEPGroup(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "pyproject.toml"), []byte("[project]\nname = \"nm\"\nversion = \"1\"\n\n[project.entry-points.\"astrabox.providers.runtime-preparation\"]\nnm = \"nm:Provider\"\n"), 0o644)
	code, stdout, stderr := run(t, "conformance", "run", "--project", dir, "--format", "json")
	if code != ExitFailed {
		t.Fatalf("exit %d, want 1\n%s\n%s", code, stdout, stderr)
	}
	var rep struct {
		Results []struct {
			Check    string `json:"check"`
			Status   string `json:"status"`
			Location *struct {
				Path string `json:"path"`
				Line int    `json:"line"`
			} `json:"location"`
		} `json:"results"`
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Results {
		switch {
		case r.Check == "EP-GROUP":
			if r.Status != "failed" || r.Location == nil || r.Location.Path != "pyproject.toml" || r.Location.Line != 5 {
				t.Errorf("EP-GROUP: %+v", r)
			}
		case r.Status != "skipped":
			t.Errorf("%s is %s, want skipped", r.Check, r.Status)
		}
	}
}

// TestRunWithNoArgumentsReadsNoneFromTheProcess: cobra falls back to os.Args when given nil arguments; Run must
// not, or a test binary's own flags (-test.timeout 30m) become the command line.
func TestRunWithNoArgumentsReadsNoneFromTheProcess(t *testing.T) {
	saved := os.Args
	os.Args = []string{"astrabox", "version"}
	t.Cleanup(func() { os.Args = saved })
	code, stdout, stderr := run(t) // nil
	empty, emptyOut, emptyErr := run(t, []string{}...)
	if code != empty || stdout != emptyOut || stderr != emptyErr {
		t.Errorf("nil arguments: exit %d, stdout %q, stderr %q; empty: exit %d, stdout %q, stderr %q", code, stdout, stderr, empty, emptyOut, emptyErr)
	}
}
