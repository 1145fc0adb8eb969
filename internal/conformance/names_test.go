package conformance

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/astrabox-dev/astrabox/internal/simulate"
)

// TestNoNameLiterals guards the typed names: the decision code names callbacks, result kinds and outcomes
// only through the simulate constants. A string literal equal to one of those names, or within two edits of
// one (a typo that would make a check pass vacuously), fails the test.
func TestNoNameLiterals(t *testing.T) {
	var names []string
	for _, c := range simulate.Callbacks() {
		names = append(names, string(c))
	}
	for _, k := range simulate.ResultKinds() {
		if len(k) > 5 { // "bool", "none", "other" are ordinary words in messages
			names = append(names, string(k))
		}
	}
	for _, o := range simulate.Outcomes() {
		if len(o) > 6 {
			names = append(names, string(o))
		}
	}
	files, err := filepath.Glob("checks_*.go")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, "facts.go", "run.go", "judge.go", "exercise.go", "exercise_checks.go", "describe.go")
	fset := token.NewFileSet()
	checked := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			continue // a listed file that does not exist
		}
		checked++
		ast.Inspect(file, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil {
				return true
			}
			for _, name := range names {
				if s == name || nearName(s, name) {
					t.Errorf("%s: string literal %q; use the simulate constant for %q", fset.Position(lit.Pos()), s, name)
				}
			}
			return true
		})
	}
	if checked < 6 {
		t.Fatalf("only %d files checked; the glob found %v", checked, files)
	}
}

// nearName tells whether a one-word literal is a likely misspelling of name: one edit away, or two for names
// longer than eight characters.
func nearName(s, name string) bool {
	if strings.ContainsAny(s, " .:/") || len(s) < 5 {
		return false
	}
	limit := 1
	if len(name) > 8 {
		limit = 2
	}
	return levenshtein(s, name) <= limit
}

// TestCallbackKnown proves Known tells the seven callbacks from a misspelling.
func TestCallbackKnown(t *testing.T) {
	for _, c := range simulate.Callbacks() {
		if !c.Known() {
			t.Errorf("%s is not known", c)
		}
	}
	if simulate.Callback("prepare_trun").Known() {
		t.Error("a misspelt callback is known")
	}
}
