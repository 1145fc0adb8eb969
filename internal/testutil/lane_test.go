package testutil

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

const repoRoot = "../.."

// TestLongLaneSkipsUnlessItIsOn proves that LongLane skips, naming the target that runs the test, when
// ASTRABOX_LONG is unset or anything but 1, and lets the test run when it is 1.
func TestLongLaneSkipsUnlessItIsOn(t *testing.T) {
	for _, c := range []struct {
		value   string
		skipped bool
	}{{"", true}, {"0", true}, {"yes", true}, {"1", false}} {
		t.Run("ASTRABOX_LONG="+c.value, func(t *testing.T) {
			t.Setenv(LongEnv, c.value)
			var inner *testing.T
			ran := false
			t.Run("lane", func(t *testing.T) {
				inner = t
				LongLane(t, "a test of the lane")
				ran = true
			})
			if inner.Skipped() != c.skipped || ran == c.skipped {
				t.Fatalf("skipped %v, ran past LongLane %v; want skipped %v", inner.Skipped(), ran, c.skipped)
			}
		})
	}
}

// longTests finds, in every _test.go file of the repository, the top-level test functions that call
// LongLane (in their body or a subtest's, or through a helper function of their package's tests that calls
// it, such as conformance's recordedThenLive), keyed by "./<package dir> <TestName>".
func longTests(t *testing.T) map[string]bool {
	t.Helper()
	// funcs holds every top-level function of each package's test files, by package dir and name.
	funcs := map[string]map[string]*ast.FuncDecl{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(repoRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != repoRoot && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") || filepath.Dir(path) == "." {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(repoRoot, filepath.Dir(path))
		if err != nil {
			return err
		}
		pkg := "./" + filepath.ToSlash(rel)
		if funcs[pkg] == nil {
			funcs[pkg] = map[string]*ast.FuncDecl{}
		}
		for _, decl := range f.Decls {
			if fn, ok := decl.(*ast.FuncDecl); ok && fn.Recv == nil && fn.Body != nil {
				funcs[pkg][fn.Name.Name] = fn
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	for pkg, byName := range funcs {
		// lane holds the functions that reach LongLane, directly or through another of the package's test
		// functions; grown to a fixed point.
		lane := map[string]bool{}
		for changed := true; changed; {
			changed = false
			for name, fn := range byName {
				if lane[name] {
					continue
				}
				ast.Inspect(fn.Body, func(n ast.Node) bool {
					call, ok := n.(*ast.CallExpr)
					if !ok || lane[name] {
						return !lane[name]
					}
					switch f := call.Fun.(type) {
					case *ast.SelectorExpr:
						if f.Sel.Name == "LongLane" {
							lane[name] = true
						}
					case *ast.Ident:
						if lane[f.Name] {
							lane[name] = true
						}
					}
					return !lane[name]
				})
				changed = changed || lane[name]
			}
		}
		for name := range lane {
			if strings.HasPrefix(name, "Test") {
				found[pkg+" "+name] = true
			}
		}
	}
	return found
}

// makeVar reads the value of a `NAME := value` line of the Makefile.
func makeVar(t *testing.T, makefile, name string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + name + `\s*:=\s*(.*)$`).FindStringSubmatch(makefile)
	if m == nil {
		t.Fatalf("the Makefile has no %s := line", name)
	}
	return strings.TrimSpace(m[1])
}

// TestLongTargetRunsEveryLongTest holds the Makefile's long lane to the tests that call LongLane: every such
// test is in LONG_TESTS and its package in LONG_PKGS (else `make long` would never run it, and no lane would),
// and LONG_TESTS names no test that does not call it (which `make test` already runs in full). It also holds
// CI to running both lanes.
func TestLongTargetRunsEveryLongTest(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(repoRoot, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	makefile := string(data)
	if !regexp.MustCompile(`(?m)^long:`).MatchString(makefile) || !strings.Contains(makefile, LongEnv+"=1 $(GO) test") {
		t.Fatalf("the Makefile has no long target that sets %s=1", LongEnv)
	}
	names := map[string]bool{}
	for _, n := range strings.Split(makeVar(t, makefile, "LONG_TESTS"), "|") {
		names[n] = true
	}
	pkgs := map[string]bool{}
	for _, p := range strings.Fields(makeVar(t, makefile, "LONG_PKGS")) {
		pkgs[p] = true
	}
	long := longTests(t)
	if len(long) == 0 {
		t.Fatal("no test calls LongLane: the walk found nothing")
	}
	usedNames, usedPkgs := map[string]bool{}, map[string]bool{}
	var keys []string
	for k := range long {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		pkg, name, _ := strings.Cut(k, " ")
		usedNames[name], usedPkgs[pkg] = true, true
		if !names[name] {
			t.Errorf("%s (%s) calls LongLane but the Makefile's LONG_TESTS does not name it: add it", name, pkg)
		}
		if !pkgs[pkg] {
			t.Errorf("%s calls LongLane in %s, which the Makefile's LONG_PKGS does not list: add it", name, pkg)
		}
	}
	for n := range names {
		if !usedNames[n] {
			t.Errorf("LONG_TESTS names %s, which calls no LongLane: `make test` runs it already; remove it", n)
		}
	}
	for p := range pkgs {
		if !usedPkgs[p] {
			t.Errorf("LONG_PKGS lists %s, where no test calls LongLane: remove it", p)
		}
	}
	ci, err := os.ReadFile(filepath.Join(repoRoot, ".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	for _, target := range []string{"make test", LongTarget} {
		if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(target) + `\s*$`).Match(ci) {
			t.Errorf(".ci/run does not run %q on a line of its own: CI must run both lanes", target)
		}
	}
}

// TestFuzzTargetRunsEveryFuzzFunction holds the Makefile's FUZZ_TARGETS (what `make fuzz` runs) to the fuzz
// functions of the repository: every `func FuzzX(f *testing.F)` of a test file is listed as
// ./DIR:FuzzX (else no target fuzzes it; `make test` only replays its seed corpus), and every entry names
// one that exists.
func TestFuzzTargetRunsEveryFuzzFunction(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(repoRoot, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^FUZZ_TARGETS \?=((?:[^\n]*\\\n)*[^\n]*)$`).FindSubmatch(data)
	if m == nil {
		t.Fatal("the Makefile has no FUZZ_TARGETS ?= list")
	}
	listed := map[string]bool{}
	for _, f := range strings.Fields(strings.ReplaceAll(string(m[1]), "\\", " ")) {
		listed[f] = true
	}
	fuzzFunc := regexp.MustCompile(`(?m)^func (Fuzz\w+)\(\w+ \*testing\.F\)`)
	found := map[string]bool{}
	err = filepath.WalkDir(repoRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) && path != repoRoot {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(repoRoot, filepath.Dir(path))
		if err != nil {
			return err
		}
		for _, fm := range fuzzFunc.FindAllStringSubmatch(string(src), -1) {
			found["./"+filepath.ToSlash(rel)+":"+fm[1]] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(found) == 0 {
		t.Fatal("no fuzz function found: the walk found nothing")
	}
	for f := range found {
		if !listed[f] {
			t.Errorf("%s is a fuzz function that the Makefile's FUZZ_TARGETS does not list: add it", f)
		}
	}
	for f := range listed {
		if !found[f] {
			t.Errorf("FUZZ_TARGETS lists %s, which is no fuzz function of a test file: remove it", f)
		}
	}
}
