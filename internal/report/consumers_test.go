package report

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// needTool returns the path of a consumer's command-line tool. Without it the test is skipped with a message
// naming what to install, except under CI (CI set), where .ci/run installs every consumer and a missing one
// is a failure.
func needTool(t *testing.T, name, install string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err == nil {
		return p
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("%s is not installed (CI must have it: %s)", name, install)
	}
	t.Skipf("%s is not installed; install it to run this consumer check: %s", name, install)
	return ""
}

// xmllintSchema validates doc against an XML schema with xmllint and returns its complaint, if any.
func xmllintSchema(t *testing.T, schema, doc string) string {
	t.Helper()
	xmllint := needTool(t, "xmllint", "apt-get install libxml2-utils")
	f := filepath.Join(t.TempDir(), "doc.xml")
	if err := os.WriteFile(f, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(xmllint, "--noout", "--schema", schema, f).CombinedOutput()
	if err != nil {
		return strings.TrimSpace(string(out))
	}
	return ""
}

// junitSchemas are the schemas of the strict JUnit consumers: Jenkins xunit's junit-10.xsd and the Ant JUnit
// schema (windyroad JUnit.xsd, which Ant's JUnitReport task output follows).
var junitSchemas = []string{"testdata/jenkins-junit-10.xsd", "testdata/ant-junit.xsd"}

// sarifMultitool validates doc with Microsoft's SARIF multitool (npm @microsoft/sarif-multitool) and its
// GitHub rule set next to the SARIF rules, and returns each complaint as "RULE: message".
func sarifMultitool(t *testing.T, doc string) []string {
	t.Helper()
	if testing.Short() {
		t.Skip("starts Microsoft's SARIF multitool, a .NET process of about 10 s (skipped under -short)")
	}
	tool := needTool(t, "sarif-multitool", "npm install -g @microsoft/sarif-multitool")
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.sarif"), filepath.Join(dir, "out.sarif")
	if err := os.WriteFile(in, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	// The npm wrapper hands its arguments to a shell, so the semicolon-separated list is quoted for it.
	cmd := exec.Command(tool, "validate", in, "--rule-kind", `"Gh;Sarif"`, "--output", out, "--log", "ForceOverwrite")
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("sarif-multitool: %v\n%s", err, msg)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("sarif-multitool wrote no log: %v", err)
	}
	var log struct {
		Runs []struct {
			Results []struct {
				RuleID  string `json:"ruleId"`
				Level   string `json:"level"`
				Message struct {
					Text      string   `json:"text"`
					Arguments []string `json:"arguments"`
				} `json:"message"`
			} `json:"results"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(data, &log); err != nil {
		t.Fatalf("sarif-multitool log: %v", err)
	}
	var complaints []string
	for _, run := range log.Runs {
		for _, r := range run.Results {
			if r.Level == "note" || r.Level == "none" {
				continue
			}
			complaints = append(complaints, r.RuleID+": "+r.Message.Text+strings.Join(r.Message.Arguments, " | "))
		}
	}
	return complaints
}
