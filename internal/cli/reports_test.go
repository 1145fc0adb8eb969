package cli

import (
	"bufio"
	"encoding/json"
	"encoding/xml"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/astrabox-dev/astrabox/internal/conformance"
	"github.com/astrabox-dev/astrabox/internal/report"
)

// writeProject writes a provider project into dir: files maps relative paths to contents.
func writeProject(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

const hostileProvider = `[project]
name = "hostile"
version = "0"

[project.entry-points."astrabox.providers.runtime_preparation"]
hostile = "hostile_provider:Provider"
`

// TestUndecidedRunWritesJUnitAndSanitisesStderr loads a provider whose import fails with a message that
// carries a GitHub workflow command on its own line and a terminal escape sequence: the run exits 2, stderr
// shows both as inert text, and the JUnit file asked for holds one <error> case that strict consumers accept.
func TestUndecidedRunWritesJUnitAndSanitisesStderr(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python")
	}
	dir := t.TempDir()
	writeProject(t, dir, map[string]string{
		"pyproject.toml":      hostileProvider,
		"hostile_provider.py": "raise ImportError('cannot start\\n::error file=README.md,line=1::pwned\\n\\x1b[2J\\x1b[31mred')\n",
	})
	junit := filepath.Join(t.TempDir(), "junit.xml")
	code, stdout, stderr := run(t, "conformance", "run", dir, "--python", "python3", "--junit", junit)
	if code != ExitUndecided {
		t.Fatalf("exit %d, want 2\n%s\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stderr, "cannot start") {
		t.Fatalf("stderr lacks the provider's error:\n%s", stderr)
	}
	for _, ln := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(strings.TrimSpace(ln), "::") {
			t.Errorf("stderr line starts a workflow command: %q", ln)
		}
	}
	if strings.Contains(stderr, "\x1b") || !strings.Contains(stderr, `\x1b[31mred`) || !strings.Contains(stderr, `\x3a:error file=README.md`) {
		t.Errorf("escape sequence or command not shown as inert text:\n%q", stderr)
	}
	data, err := os.ReadFile(junit)
	if err != nil {
		t.Fatalf("no JUnit written on exit 2: %v", err)
	}
	var doc struct {
		Suites []struct {
			Errors int `xml:"errors,attr"`
			Cases  []struct {
				Name  string `xml:"name,attr"`
				Error *struct {
					Type    string `xml:"type,attr"`
					Message string `xml:"message,attr"`
					Text    string `xml:",chardata"`
				} `xml:"error"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Suites) != 1 || doc.Suites[0].Errors != 1 || len(doc.Suites[0].Cases) != 1 || doc.Suites[0].Cases[0].Error == nil ||
		!strings.Contains(doc.Suites[0].Cases[0].Error.Text, "cannot start") || strings.Contains(string(data), "\x1b") {
		t.Errorf("exit-2 JUnit:\n%s", data)
	}
	validateJUnit(t, data)
}

// validateJUnit checks a JUnit document with xmllint against Jenkins' junit-10.xsd and the Ant schema.
func validateJUnit(t *testing.T, data []byte) {
	t.Helper()
	xmllint, err := exec.LookPath("xmllint")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("xmllint is not installed (apt-get install libxml2-utils)")
		}
		t.Skip("xmllint is not installed; apt-get install libxml2-utils to validate JUnit")
	}
	f := filepath.Join(t.TempDir(), "j.xml")
	if err := os.WriteFile(f, data, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, xsd := range []string{"jenkins-junit-10.xsd", "ant-junit.xsd"} {
		if out, err := exec.Command(xmllint, "--noout", "--schema", repoPath("internal/report/testdata/"+xsd), f).CombinedOutput(); err != nil {
			t.Errorf("%s rejects the JUnit: %s", xsd, out)
		}
	}
}

// TestMonorepoPathsAreRepositoryRelative copies the reference provider into a subdirectory of a git
// repository and breaks it (the leak-log fixture): JUnit, SARIF, GitLab and concise paths are relative to the
// repository root, as is `report merge --source-root`, and JUnit carries the run's wall time.
func TestMonorepoPathsAreRepositoryRelative(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python")
	}
	repo := t.TempDir()
	if err := os.Mkdir(filepath.Join(repo, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(repo, "providers", "leaky")
	if err := os.CopyFS(sub, os.DirFS(repoPath("testdata/providers/broken/leak-log"))); err != nil {
		t.Fatal(err)
	}
	manifest := filepath.Join(sub, "pyproject.toml")
	data, err := os.ReadFile(manifest)
	if err != nil {
		t.Fatal(err)
	}
	abs := strings.ReplaceAll(string(data), "../../../../examples/providers/reference/src", filepath.ToSlash(repoPath("examples/providers/reference/src")))
	if err := os.WriteFile(manifest, []byte(abs), 0o644); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	files := map[string]string{}
	for _, f := range []string{"junit", "sarif", "json"} {
		files[f] = filepath.Join(out, "r."+f)
	}
	code, concise, stderr := run(t, "conformance", "run", sub, "--python", "python3", "--format", "CONCISE",
		"--junit", files["junit"], "--sarif", files["sarif"], "--json", files["json"])
	if code != ExitFailed {
		t.Fatalf("exit %d, want 1\n%s\n%s", code, concise, stderr)
	}
	if !strings.Contains(concise, "providers/leaky/") || !strings.Contains(concise, " LEAK-LOG ") {
		t.Errorf("concise paths not relative to the repository:\n%s", concise)
	}
	junit, _ := os.ReadFile(files["junit"])
	if !strings.Contains(string(junit), "at providers/leaky/") || strings.Contains(string(junit), `time="0.000"`) {
		t.Errorf("JUnit location not repository-relative or time 0:\n%s", junit)
	}
	validateJUnit(t, junit)
	sarif, _ := os.ReadFile(files["sarif"])
	if !strings.Contains(string(sarif), `"uri": "providers/leaky/`) {
		t.Errorf("SARIF not repository-relative:\n%s", sarif)
	}
	// report merge: the same paths from the JSON, with --source-root and with GITHUB_WORKSPACE.
	code, merged, stderr := run(t, "report", "merge", files["json"], "--format", "gitlab", "--source-root", repo)
	if code != ExitFailed || !strings.Contains(merged, `"path": "providers/leaky/`) {
		t.Errorf("merge --source-root: exit %d\n%s\n%s", code, merged, stderr)
	}
	code, merged, _ = runWithEnv(t, map[string]string{"GITHUB_WORKSPACE": repo}, "report", "merge", files["json"], "--format", "sarif")
	if code != ExitFailed || !strings.Contains(merged, `"uri": "providers/leaky/`) {
		t.Errorf("merge with GITHUB_WORKSPACE: exit %d\n%s", code, merged)
	}
}

func runWithEnv(t *testing.T, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	old := os.Getenv("PATH")
	return runGetenv(t, func(k string) string {
		if v, ok := env[k]; ok {
			return v
		}
		if k == "PATH" {
			return old
		}
		return ""
	}, args...)
}

// TestInstalledCopyMapsToSource: a location in the project's .venv site-packages (a non-editable install)
// is reported at the project's own source file.
func TestInstalledCopyMapsToSource(t *testing.T) {
	dir := t.TempDir()
	writeProject(t, dir, map[string]string{
		"src/acme/provider.py":                                "x = 1\n",
		".venv/lib/python3.11/site-packages/acme/provider.py": "x = 1\n",
		".venv/pyvenv.cfg":                                    "home = /usr/bin\n",
	})
	rep := &report.Report{Provider: report.Provider{Project: dir}, Results: []report.Result{{
		Check: "LEAK-LOG", Status: report.StatusFailed,
		Location: &report.Location{Path: filepath.Join(dir, ".venv/lib/python3.11/site-packages/acme/provider.py"), Line: 3},
		Evidence: []report.Evidence{{Location: &report.Location{Path: "/usr/lib/python3/site-packages/other/x.py", Line: 1}}},
	}}}
	got := mapInstalledSources(rep)
	if l := got.Results[0].Location; l.Path != "src/acme/provider.py" || l.Line != 3 {
		t.Errorf("installed copy mapped to %+v", l)
	}
	if l := got.Results[0].Evidence[0].Location; l.Path != "/usr/lib/python3/site-packages/other/x.py" {
		t.Errorf("a module the project does not hold was remapped to %+v", l)
	}
	if rep.Results[0].Location.Path == "src/acme/provider.py" {
		t.Error("the input report was modified")
	}
}

// TestSecretRulesAreSecurityRules: every check of the secrets area is a security rule in SARIF.
func TestSecretRulesAreSecurityRules(t *testing.T) {
	rep := &report.Report{Schema: report.Schema}
	for _, c := range conformance.Checks() {
		rep.Results = append(rep.Results, report.Result{Check: c.ID, Title: c.Title, Area: c.Area, Severity: c.Severity, Status: report.StatusPassed})
	}
	var b strings.Builder
	if err := (report.SARIF{}).Render(&b, rep); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Runs []struct {
			Tool struct {
				Driver struct {
					Rules []struct {
						ID         string `json:"id"`
						Properties struct {
							Area             string   `json:"area"`
							Tags             []string `json:"tags"`
							SecuritySeverity string   `json:"security-severity"`
						} `json:"properties"`
					} `json:"rules"`
				} `json:"driver"`
			} `json:"tool"`
		} `json:"runs"`
	}
	if err := json.Unmarshal([]byte(b.String()), &doc); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range doc.Runs[0].Tool.Driver.Rules {
		if r.Properties.Area == report.AreaSecrets {
			n++
			if r.Properties.SecuritySeverity == "" || !strings.Contains(strings.Join(r.Properties.Tags, ","), "security") {
				t.Errorf("secrets rule %s is not a security rule: %+v", r.ID, r.Properties)
			}
		}
	}
	if n == 0 {
		t.Fatalf("no check has area %q: the secrets area was renamed", report.AreaSecrets)
	}
}

// TestCtrlCSaysInterrupted starts a long exploration in a real process, sends SIGINT once the default
// suite has run (the -v line "ran N scenario(s)"), and requires exit 2 with "interrupted", never the
// internal "context canceled".
func TestCtrlCSaysInterrupted(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python")
	}
	bin := kitBinary(t)
	cmd := exec.Command(bin, "conformance", "run", repoPath("examples/providers/reference"), "--python", "python3", "-v", "--explore", "100000")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var seen strings.Builder
	sc := bufio.NewScanner(stderr)
	signalled := false
	for sc.Scan() {
		seen.WriteString(sc.Text() + "\n")
		if !signalled && strings.Contains(sc.Text(), "ran ") && strings.Contains(sc.Text(), "scenario(s)") {
			signalled = true
			if err := cmd.Process.Signal(os.Interrupt); err != nil {
				t.Fatal(err)
			}
		}
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if !signalled || !errors.As(err, &ee) || ee.ExitCode() != ExitUndecided {
		t.Fatalf("signalled %v, exit %v\n%s", signalled, err, seen.String())
	}
	if !strings.Contains(seen.String(), "error: interrupted") || strings.Contains(seen.String(), "context canceled") {
		t.Errorf("stderr after Ctrl-C:\n%s", seen.String())
	}
}
