package conformance

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLoadErrorSaysWhereItLooked loads providers that fail to import and checks that the error names the
// interpreter and sys.path used and the code roots found, and says what to do (it used to be a dead end:
// "No module named 'x'" and nothing else).
func TestLoadErrorSaysWhereItLooked(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python")
	}
	py, _ := filepath.Glob("/root/.pyenv/versions/3.11.*/bin/python3.11")
	if len(py) == 0 {
		t.Skip("no pyenv Python 3.11")
	}
	write := func(path, body string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name, entry, file, body string
		want                    []string
	}{
		{"a dependency is missing", "dep_pkg.provider:P", "src/dep_pkg/provider.py", "import not_installed_anywhere\n",
			[]string{"No module named 'not_installed_anywhere'", "is in the project", "-m pip install -e "}},
		{"the module is outside the code roots", "lib_pkg.provider:P", "lib/lib_pkg/provider.py", "class P: pass\n",
			[]string{"No module named 'lib_pkg'", "lib_pkg.provider is in none of the code roots", "python-path"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			write(filepath.Join(dir, "pyproject.toml"), "[project]\nname = \"lp\"\n\n[project.entry-points.\"astrabox.providers.runtime_preparation\"]\n"+
				"lp = \""+c.entry+"\"\n")
			write(filepath.Join(dir, c.file), c.body)
			write(filepath.Join(dir, filepath.Dir(c.file), "__init__.py"), "")
			ctx := context.Background()
			target, err := Resolve(ctx, Options{Project: dir, Python: py[0], Getenv: func(string) string { return "" }})
			if err != nil {
				t.Fatal(err)
			}
			_, reply, err := Inspect(ctx, target)
			if err != nil || reply == nil || reply.OK {
				t.Fatalf("inspect: %v %+v", err, reply)
			}
			lerr := LoadError(target, reply)
			var u *UndecidedError
			if !errors.As(lerr, &u) {
				t.Fatalf("not undecided (exit 2): %T", lerr)
			}
			msg := lerr.Error()
			want := append([]string{
				"interpreter: " + py[0] + " (Python 3.11.",
				"sys.path: " + strings.Join(target.Paths, ", ") + ", then the interpreter's standard library and site-packages",
				"code roots found: " + strings.Join(target.Project.CodeRoots, ", "),
			}, c.want...)
			for _, w := range want {
				if !strings.Contains(msg, w) {
					t.Errorf("message lacks %q:\n%s", w, msg)
				}
			}
		})
	}
}
