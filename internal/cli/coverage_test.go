package cli

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/astrabox-dev/astrabox/internal/report"
)

// TestReferenceCoverageFiles runs the suite on the reference provider with coverage files asked for, and
// hands them to their consumers as a CI job would: genhtml from the repository root (the source root), and
// the Cobertura DTD check. The text report ends with the provider's coverage and what never ran; report
// merge of the JSON gives the same LCOV.
func TestReferenceCoverageFiles(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python")
	}
	out := t.TempDir()
	lcov, xmlFile, jsonFile := filepath.Join(out, "c.info"), filepath.Join(out, "c.xml"), filepath.Join(out, "r.json")
	// As on GitHub Actions (the checkout is the workspace): the paths do not depend on this tree being a git
	// repository (a source tarball is not).
	code, stdout, stderr := runWithEnv(t, map[string]string{"GITHUB_WORKSPACE": repoPath(".")}, "conformance", "run", "--project", repoPath("examples/providers/reference"),
		"--coverage-lcov", lcov, "--coverage-xml", xmlFile, "--json", jsonFile)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	cov := stdout[strings.LastIndex(stdout, "Provider coverage"):]
	rep, err := report.ReadJSON(bytes.NewReader(mustRead(t, jsonFile)))
	if err != nil || rep.Coverage == nil || len(rep.Coverage.Files) != 3 {
		t.Fatalf("json coverage: %v %+v", err, rep)
	}
	tot := rep.Coverage.Totals()
	flat := strings.Join(strings.Fields(cov), " ")
	wants := []string{fmt.Sprintf("Provider coverage %d of %d lines", tot.Reached, tot.Lines), "src/reference_provider/provider.py", "prepare_turn: ran"}
	// Every range the JSON says never ran inside an implemented callback is named in the text.
	ranges := 0
	for _, cb := range rep.Coverage.Callbacks {
		if cb.Implementation == nil && cb.Name != "load" {
			t.Errorf("implemented callback %s has no implementation span", cb.Name)
		}
		for _, r := range cb.Unreached {
			ranges++
			want := fmt.Sprintf("%s: line %d", cb.Name, r.First)
			if r.Last != r.First {
				want = fmt.Sprintf("%s: lines %d-%d", cb.Name, r.First, r.Last)
			}
			wants = append(wants, want)
		}
	}
	if ranges == 0 {
		t.Log("the suite reached every line of every callback's own function: no unreached range to show")
	}
	for _, want := range wants {
		if !strings.Contains(flat, want) {
			t.Errorf("the coverage section lacks %q:\n%s", want, cov)
		}
	}
	info := string(mustRead(t, lcov))
	if !strings.Contains(info, "SF:examples/providers/reference/src/reference_provider/provider.py\n") {
		t.Errorf("LCOV paths are not relative to the repository:\n%.400s", info)
	}
	if xml := string(mustRead(t, xmlFile)); !strings.Contains(xml, `filename="examples/providers/reference/src/reference_provider/provider.py"`) {
		t.Errorf("Cobertura paths are not relative to the repository:\n%.600s", xml)
	}
	if genhtml, err := exec.LookPath("genhtml"); err == nil {
		cmd := exec.Command(genhtml, "--branch-coverage", "--output-directory", filepath.Join(out, "html"), lcov)
		cmd.Dir = repoPath(".")
		if res, err := cmd.CombinedOutput(); err != nil || bytes.Contains(bytes.ToLower(res), []byte("error")) {
			t.Errorf("genhtml refused the LCOV file: %v\n%s", err, res)
		}
	} else {
		t.Log("genhtml is not installed (apt-get install lcov): the LCOV file was not handed to it")
	}
	if xmllint, err := exec.LookPath("xmllint"); err == nil {
		dtd := repoPath("internal/coverage/testdata/coverage-04.dtd")
		catalog := filepath.Join(out, "catalog.xml")
		if err := os.WriteFile(catalog, []byte(`<?xml version="1.0"?>
<catalog xmlns="urn:oasis:names:tc:entity:xmlns:xml:catalog">
  <system systemId="http://cobertura.sourceforge.net/xml/coverage-04.dtd" uri="file://`+dtd+`"/>
</catalog>
`), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(xmllint, "--noout", "--nonet", "--dtdvalid", dtd, xmlFile)
		cmd.Env = append(os.Environ(), "XML_CATALOG_FILES="+catalog)
		if res, err := cmd.CombinedOutput(); err != nil || len(res) != 0 {
			t.Errorf("the Cobertura file is not valid against coverage-04.dtd: %v\n%s", err, res)
		}
	} else {
		t.Log("xmllint is not installed (apt-get install libxml2-utils): the Cobertura file was not validated")
	}
	merged := filepath.Join(out, "m.info")
	if code, _, stderr := runWithEnv(t, map[string]string{"GITHUB_WORKSPACE": repoPath(".")}, "report", "merge", jsonFile, jsonFile, "--coverage-lcov", merged, "--output", filepath.Join(out, "m.json")); code != 0 {
		t.Fatalf("report merge: exit %d: %s", code, stderr)
	}
	if got := string(mustRead(t, merged)); got != info {
		t.Errorf("report merge of one run twice changed its LCOV:\n%s\n---\n%s", got, info)
	}
}

// TestCoverageFlagsConflict refuses coverage files with coverage turned off.
func TestCoverageFlagsConflict(t *testing.T) {
	code, _, stderr := run(t, "conformance", "run", "--coverage=false", "--coverage-lcov", filepath.Join(t.TempDir(), "x"))
	if code != ExitUndecided || !strings.Contains(stderr, "--coverage-lcov and --coverage-xml need coverage") {
		t.Errorf("exit %d: %s", code, stderr)
	}
}
