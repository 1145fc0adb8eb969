package simulate

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"

	"github.com/astrabox-dev/astrabox/internal/clauses"
)

// TestEveryPlatformClauseHasATest fails on a `platform` clause of spec/clauses.md (the copy embedded in
// internal/clauses) that no test of this package is named after: TestBOUND_CLAIM for BOUND-CLAIM,
// TestSYNC_CAS_EveryField also counting for SYNC-CAS.
func TestEveryPlatformClauseHasATest(t *testing.T) {
	var ids []string
	for _, c := range clauses.All() {
		if c.Owner == clauses.OwnerPlatform {
			ids = append(ids, c.ID)
		}
	}
	if len(ids) < 10 {
		t.Fatalf("read only %d platform clauses from clauses.md; the table format changed?", len(ids))
	}
	tests := testNames(t)
	for _, id := range ids {
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
