package coverage

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/astrabox-dev/astrabox/internal/harness"
)

func sampleProfile(t *testing.T) (root string, p *Profile) {
	t.Helper()
	root, path := writeSource(t)
	b := NewBuilder()
	b.Add("s1", "r1", staticReport(path))
	b.Add("s1", "r1", turn(path, []int{7, 10}, []int{1}))
	b.Implement("prepare_turn", path, 6)
	// An empty file (a package's __init__.py) has no executable line; both formats must still be valid.
	empty := filepath.Join(root, "src", "pkg", "__init__.py")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r := staticReport(path)
	r.Files = map[string]harness.CoverageFile{empty: {}}
	r.Hits = nil
	b.Add("s1", "r1", r)
	return root, b.Profile()
}

func TestLCOVRecords(t *testing.T) {
	root, p := sampleProfile(t)
	var out bytes.Buffer
	if err := WriteLCOV(&out, p, root); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, want := range []string{"TN:astrabox\n", "SF:src/pkg/provider.py\n", "FN:6,P.prepare_turn\n", "FNDA:1,P.prepare_turn\n",
		"FNDA:0,P.plan\n", "BRDA:7,0,0,0\n", "BRDA:7,0,1,1\n", "BRF:2\nBRH:1\n", "DA:8,0\n", "DA:10,1\n", "LF:10\nLH:7\n",
		"SF:src/pkg/__init__.py\nFNF:0\nFNH:0\nLF:0\nLH:0\nend_of_record\n"} {
		if !strings.Contains(text, want) {
			t.Errorf("lcov lacks %q:\n%s", want, text)
		}
	}
}

// TestLCOVGenhtml feeds the LCOV file to genhtml (Debian's lcov package), as a CI job would: from the
// repository root, with the paths as written.
func TestLCOVGenhtml(t *testing.T) {
	genhtml, err := exec.LookPath("genhtml")
	if err != nil {
		t.Skip("genhtml is not installed (apt-get install lcov); .ci/run installs it")
	}
	root, p := sampleProfile(t)
	info := filepath.Join(root, "coverage.info")
	var out bytes.Buffer
	if err := WriteLCOV(&out, p, root); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(info, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	html := filepath.Join(t.TempDir(), "html")
	cmd := exec.Command(genhtml, "--branch-coverage", "--output-directory", html, info)
	cmd.Dir = root
	res, err := cmd.CombinedOutput()
	if err != nil || bytes.Contains(bytes.ToLower(res), []byte("warning")) || bytes.Contains(bytes.ToLower(res), []byte("error")) {
		t.Fatalf("genhtml: %v\n%s", err, res)
	}
	if !bytes.Contains(res, []byte("lines......: 70.0% (7 of 10 lines)")) || !bytes.Contains(res, []byte("branches...: 50.0% (1 of 2 branches)")) {
		t.Errorf("genhtml summary:\n%s", res)
	}
	// genhtml drops the directories common to every file (here src/).
	page, err := os.ReadFile(filepath.Join(html, "pkg", "provider.py.gcov.html"))
	if err != nil {
		t.Fatalf("genhtml wrote no page for the file: %v", err)
	}
	if !bytes.Contains(page, []byte("if context.refresh:")) {
		t.Errorf("the page does not show the source")
	}
}

// TestCoberturaDTD validates the Cobertura file against Cobertura's own DTD (testdata/coverage-04.dtd) with
// xmllint, and checks its numbers.
func TestCoberturaDTD(t *testing.T) {
	root, p := sampleProfile(t)
	var out bytes.Buffer
	if err := WriteCobertura(&out, p, CoberturaOptions{Root: root, Version: "test", Timestamp: 1700000000}); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, want := range []string{`lines-covered="7" lines-valid="10" branches-covered="1" branches-valid="2"`,
		`<package name="src.pkg"`, `filename="src/pkg/provider.py"`, `<line number="7" hits="1" branch="true" condition-coverage="50% (1/2)"></line>`,
		`<line number="8" hits="0"></line>`, `<source>` + root + `</source>`, `filename="src/pkg/__init__.py" line-rate="1" branch-rate="1" complexity="0">`} {
		if !strings.Contains(text, want) {
			t.Errorf("cobertura lacks %q:\n%s", want, text)
		}
	}
	xmllint, err := exec.LookPath("xmllint")
	if err != nil {
		t.Skip("xmllint is not installed (apt-get install libxml2-utils); .ci/run installs it")
	}
	file := filepath.Join(t.TempDir(), "coverage.xml")
	if err := os.WriteFile(file, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	dtd, _ := filepath.Abs(filepath.Join("testdata", "coverage-04.dtd"))
	// The file names the DTD by its public URL; a catalog resolves it to the vendored copy, offline.
	catalog := filepath.Join(t.TempDir(), "catalog.xml")
	if err := os.WriteFile(catalog, []byte(`<?xml version="1.0"?>
<catalog xmlns="urn:oasis:names:tc:entity:xmlns:xml:catalog">
  <system systemId="http://cobertura.sourceforge.net/xml/coverage-04.dtd" uri="file://`+dtd+`"/>
</catalog>
`), 0o644); err != nil {
		t.Fatal(err)
	}
	lint := func(file string) ([]byte, error) {
		cmd := exec.Command(xmllint, "--noout", "--nonet", "--dtdvalid", dtd, file)
		cmd.Env = append(os.Environ(), "XML_CATALOG_FILES="+catalog)
		return cmd.CombinedOutput()
	}
	res, err := lint(file)
	if err != nil || len(res) != 0 {
		t.Fatalf("xmllint --dtdvalid: %v\n%s\n%s", err, res, text)
	}
	// The check itself can fail: a file missing a required attribute is refused.
	bad := strings.Replace(text, ` complexity="0" version="test"`, ` version="test"`, 1)
	if err := os.WriteFile(file, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	if res, err := lint(file); err == nil {
		t.Errorf("xmllint accepted a file without complexity:\n%s", res)
	}
}
