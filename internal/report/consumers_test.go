package report

import (
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
