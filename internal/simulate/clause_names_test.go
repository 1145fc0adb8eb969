package simulate

import (
	"bufio"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// platformClauseRow is one row of a clause table in spec/clauses.md owned by the platform.
var platformClauseRow = regexp.MustCompile(`^\| ([A-Z][A-Z0-9]*(?:-[A-Z0-9]+)+) \| platform \|`)

// TestEveryPlatformClauseHasATest fails on a `platform` clause of spec/clauses.md (the repository's copy,
// testdata/spec/clauses.md) that no test of this package is named after: TestBOUND_CLAIM for BOUND-CLAIM,
// TestSYNC_CAS_EveryField also counting for SYNC-CAS.
func TestEveryPlatformClauseHasATest(t *testing.T) {
	f, err := os.Open(filepath.Join("..", "..", "testdata", "spec", "clauses.md"))
	if err != nil {
		t.Fatalf("the clause list: %v", err)
	}
	defer f.Close()
	var clauses []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if m := platformClauseRow.FindStringSubmatch(sc.Text()); m != nil {
			clauses = append(clauses, m[1])
		}
	}
	if len(clauses) < 10 {
		t.Fatalf("read only %d platform clauses from clauses.md; the table format changed?", len(clauses))
	}
	tests := testNames(t)
	for _, id := range clauses {
		want := "Test" + strings.ReplaceAll(id, "-", "_")
		found := false
		for _, name := range tests {
			if name == want || strings.HasPrefix(name, want+"_") {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("platform clause %s has no test named %s in internal/simulate", id, want)
		}
	}
}

// testNames are the names of the Test functions of this package's test files.
func testNames(t *testing.T) []string {
	t.Helper()
	files, _ := filepath.Glob("*_test.go")
	fset := token.NewFileSet()
	var names []string
	for _, p := range files {
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil && strings.HasPrefix(fn.Name.Name, "Test") {
				names = append(names, fn.Name.Name)
			}
		}
	}
	return names
}
