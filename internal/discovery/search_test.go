package discovery

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// pyenvPython returns the pyenv interpreter of a version ("3.9" finds 3.9.18), skipping when absent.
func pyenvPython(t *testing.T, minor string) string {
	t.Helper()
	m, _ := filepath.Glob("/root/.pyenv/versions/" + minor + ".*/bin/python" + minor)
	if len(m) == 0 {
		t.Skip("no pyenv Python " + minor)
	}
	return m[0]
}

func write(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func hasWarning(in *Interpreter, want string) bool {
	for _, w := range in.Warnings {
		if strings.Contains(w, want) {
			return true
		}
	}
	return false
}

// TestPythonVersionPinThroughRealPyenvShim is the reported case: a project pinned to 3.9 by .python-version,
// python3 on PATH being pyenv's shim. The probe used to run in the temporary directory, where the shim
// resolves the global version (3.11).
func TestPythonVersionPinThroughRealPyenvShim(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python")
	}
	shim := "/root/.pyenv/shims/python3"
	if !isExecutable(shim) || os.Getenv("PYENV_VERSION") != "" {
		t.Skip("no pyenv shim, or PYENV_VERSION overrides the pin")
	}
	want := pyenvPython(t, "3.9")
	dir := t.TempDir()
	write(t, filepath.Join(dir, "pyproject.toml"), "[project]\nname = \"pinned\"\n")
	write(t, filepath.Join(dir, ".python-version"), "3.9\n")
	lookPath := func(n string) (string, error) {
		if n == "python3" {
			return shim, nil
		}
		return "", exec.ErrNotFound
	}
	in, err := FindInterpreter(InterpreterOptions{ProjectDir: dir, Getenv: envOf(map[string]string{"HOME": "/root"}), LookPath: lookPath})
	if err != nil {
		t.Fatal(err)
	}
	if in.Version[0] != 3 || in.Version[1] != 9 || in.Via != shim || filepath.Dir(in.Path) != filepath.Dir(want) {
		t.Fatalf("chose %s (Python %s via %q), want the 3.9 behind the shim", in.Path, in.VersionString(), in.Via)
	}
	if !strings.Contains(in.Reason, "pinned by "+filepath.Join(dir, ".python-version")) || len(in.Warnings) != 0 {
		t.Fatalf("reason %q, warnings %q", in.Reason, in.Warnings)
	}
}

// TestVersionPinFallsBackToInstalls: python3 on PATH is not a shim and has the wrong version, so the pinned
// version is looked for as pythonX.Y on PATH and among pyenv, asdf and mise installs; an uninstalled pin is
// a clear error naming the file.
func TestVersionPinFallsBackToInstalls(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python")
	}
	py311, py310 := pyenvPython(t, "3.11"), pyenvPython(t, "3.10")
	root := t.TempDir()
	pathPy := fakeEnv(t, filepath.Join(root, "usr"), py311, false)
	lookPath := func(n string) (string, error) {
		if n == "python3" {
			return pathPy, nil
		}
		return "", exec.ErrNotFound
	}
	// A fake asdf data directory holding 3.10.13 (a link to pyenv's) and a newer 3.10 that is broken.
	asdf := filepath.Join(root, "asdf")
	ver := filepath.Base(filepath.Dir(filepath.Dir(py310)))
	fakeEnv(t, filepath.Join(asdf, "installs", "python", ver), py310, false)
	if err := os.MkdirAll(filepath.Join(asdf, "installs", "python", "3.10.99", "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	project := filepath.Join(root, "ws", "project")
	write(t, filepath.Join(project, "pyproject.toml"), "[project]\nname = \"p\"\n")
	write(t, filepath.Join(root, "ws", ".tool-versions"), "nodejs 20.1.0\npython 3.10 3.11.7 # comment\n")
	env := map[string]string{"HOME": filepath.Join(root, "home"), "ASDF_DATA_DIR": asdf}
	in, err := FindInterpreter(InterpreterOptions{ProjectDir: project, Getenv: envOf(env), LookPath: lookPath})
	if err != nil {
		t.Fatal(err)
	}
	if in.Version[1] != 10 || !strings.Contains(in.Reason, "Python 3.10 pinned by "+filepath.Join(root, "ws", ".tool-versions")) ||
		!strings.Contains(in.Reason, "passed over: "+pathPy+" (is Python 3.11") {
		t.Fatalf("chose %s (%s): %s", in.Path, in.VersionString(), in.Reason)
	}

	// PYENV_VERSION overrides the files, as it does for pyenv; a version nobody installed is an error.
	env["PYENV_VERSION"] = "3.7.99"
	_, err = FindInterpreter(InterpreterOptions{ProjectDir: project, Getenv: envOf(env), LookPath: lookPath})
	if err == nil || !strings.Contains(err.Error(), "Python 3.7.99 pinned by PYENV_VERSION=3.7.99, and no interpreter of that version was found") ||
		!strings.Contains(err.Error(), "pyenv install 3.7.99") {
		t.Fatalf("uninstalled pin: %v", err)
	}
	delete(env, "PYENV_VERSION")
	write(t, filepath.Join(project, ".python-version"), "3.8.1\n")
	_, err = FindInterpreter(InterpreterOptions{ProjectDir: project, Getenv: envOf(env), LookPath: lookPath})
	var e *Error
	if !errors.As(err, &e) || e.File != filepath.Join(project, ".python-version") || e.ExitCode() != 2 {
		t.Fatalf("the nearer .python-version wins and is named: %v", err)
	}
}

// TestEnvironmentCandidates covers what used to be skipped or overridden silently: a venv/ directory, a
// .venv file holding an environment name, a dangling .venv/bin/python, another project's VIRTUAL_ENV.
func TestEnvironmentCandidates(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python")
	}
	py, _ := realPython(t)
	root := t.TempDir()
	pathPy := fakeEnv(t, filepath.Join(root, "usr"), py, false)
	lookPath := func(n string) (string, error) {
		if n == "python3" {
			return pathPy, nil
		}
		return "", exec.ErrNotFound
	}
	home := filepath.Join(root, "home")
	env := map[string]string{"HOME": home}
	find := func(dir string) *Interpreter {
		t.Helper()
		in, err := FindInterpreter(InterpreterOptions{ProjectDir: dir, Getenv: envOf(env), LookPath: lookPath})
		if err != nil {
			t.Fatal(err)
		}
		return in
	}

	// venv/ is not used (uv looks for .venv alone), but it is named and warned about.
	p1 := filepath.Join(root, "p1")
	fakeEnv(t, filepath.Join(p1, "venv"), py, true)
	in := find(p1)
	if in.Path != pathPy || !hasWarning(in, filepath.Join(p1, "venv")+" is not used") ||
		!strings.Contains(in.Reason, "passed over: venv/ at "+filepath.Join(p1, "venv")) {
		t.Fatalf("venv/: %s %q %q", in.Path, in.Reason, in.Warnings)
	}

	// A .venv file holding a name, resolved in virtualenvwrapper's WORKON_HOME (default ~/.virtualenvs).
	p2 := filepath.Join(root, "p2")
	named := fakeEnv(t, filepath.Join(home, ".virtualenvs", "p2-env"), py, true)
	write(t, filepath.Join(p2, ".venv"), "p2-env\n")
	if in := find(p2); in.Path != named || !strings.Contains(in.Reason, ".venv file "+filepath.Join(p2, ".venv")) {
		t.Fatalf(".venv name: %s %q", in.Path, in.Reason)
	}
	// A name nothing holds is passed over with a warning.
	write(t, filepath.Join(p2, ".venv"), "gone-env\n")
	if in := find(p2); in.Path != pathPy || !hasWarning(in, `names "gone-env", which is no usable environment`) {
		t.Fatalf("unknown .venv name: %s %q", in.Path, in.Warnings)
	}

	// A .venv whose python links to a removed interpreter: passed over with uv's warning and how to mend it.
	p3 := filepath.Join(root, "p3")
	if err := os.MkdirAll(filepath.Join(p3, ".venv", "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/nonexistent/python3.8", filepath.Join(p3, ".venv", "bin", "python")); err != nil {
		t.Fatal(err)
	}
	in = find(p3)
	if in.Path != pathPy || !hasWarning(in, "dangling link to /nonexistent/python3.8") || !hasWarning(in, "python3 -m venv --clear") ||
		!strings.Contains(in.Reason, "passed over: .venv at "+filepath.Join(p3, ".venv")) {
		t.Fatalf("dangling .venv: %s %q %q", in.Path, in.Reason, in.Warnings)
	}

	// Another project's active environment while this one has .venv: .venv wins, with uv's warning.
	p4 := filepath.Join(root, "p4")
	own := fakeEnv(t, filepath.Join(p4, ".venv"), py, true)
	other := filepath.Join(root, "other", ".venv")
	fakeEnv(t, other, py, true)
	env["VIRTUAL_ENV"] = other
	in = find(p4)
	if in.Path != own || !hasWarning(in, "VIRTUAL_ENV="+other+" does not match the project environment "+filepath.Join(p4, ".venv")) {
		t.Fatalf("other VIRTUAL_ENV: %s %q", in.Path, in.Warnings)
	}
	// The project's own environment, activated, is simply used.
	env["VIRTUAL_ENV"] = filepath.Join(p4, ".venv")
	if in := find(p4); in.Path != own || len(in.Warnings) != 0 || in.Reason != "VIRTUAL_ENV="+filepath.Join(p4, ".venv") {
		t.Fatalf("own VIRTUAL_ENV: %s %q %q", in.Path, in.Reason, in.Warnings)
	}
	delete(env, "VIRTUAL_ENV")

	// A .venv made with another Python than the project's pin is used, with a warning.
	write(t, filepath.Join(p4, ".python-version"), "3.7\n")
	if in := find(p4); in.Path != own || !hasWarning(in, "pins Python 3.7, but the interpreter chosen by .venv at") {
		t.Fatalf("pin mismatch: %q", in.Warnings)
	}
}

// TestRequiresPythonIsEnforced: an interpreter the project's requires-python excludes is refused with exit
// code 2, naming the file and line; one it allows passes.
func TestRequiresPythonIsEnforced(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python")
	}
	py39 := pyenvPython(t, "3.9")
	dir := t.TempDir()
	write(t, filepath.Join(dir, "pyproject.toml"), "[project]\nname = \"p\"\nrequires-python = \">=3.10\"\n")
	_, err := FindInterpreter(InterpreterOptions{Flag: py39, ProjectDir: dir, Getenv: envOf(nil)})
	var e *Error
	if !errors.As(err, &e) || e.File != filepath.Join(dir, "pyproject.toml") || e.Line != 3 || e.ExitCode() != 2 ||
		!strings.Contains(err.Error(), "the project requires Python >=3.10, but the interpreter "+py39+" (chosen by --python flag) is Python 3.9.") {
		t.Fatalf("requires-python: %v", err)
	}
	write(t, filepath.Join(dir, "pyproject.toml"), "[project]\nname = \"p\"\nrequires-python = \"~=3.9\"\n")
	if _, err := FindInterpreter(InterpreterOptions{Flag: py39, ProjectDir: dir, Getenv: envOf(nil)}); err != nil {
		t.Fatal(err)
	}
	// setup.cfg's python_requires counts too; an unreadable specifier is a warning, not a refusal.
	os.Remove(filepath.Join(dir, "pyproject.toml"))
	write(t, filepath.Join(dir, "setup.cfg"), "[metadata]\nname = p\n[options]\npython_requires = >=3.9, !=3.9.*\n")
	if _, err := FindInterpreter(InterpreterOptions{Flag: py39, ProjectDir: dir, Getenv: envOf(nil)}); err == nil || !strings.Contains(err.Error(), "setup.cfg:4") {
		t.Fatalf("python_requires: %v", err)
	}
	write(t, filepath.Join(dir, "setup.cfg"), "[metadata]\nname = p\n[options]\npython_requires = >=three\n")
	in, err := FindInterpreter(InterpreterOptions{Flag: py39, ProjectDir: dir, Getenv: envOf(nil)})
	if err != nil || !hasWarning(in, `cannot read requires-python ">=three"`) {
		t.Fatalf("unreadable specifier: %v %+v", err, in)
	}
}

// TestProbeIgnoresProjectModules: the probe runs in the project directory, where a json.py or platform.py
// of the project must not answer for the standard library.
func TestProbeIgnoresProjectModules(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python")
	}
	py, version := realPython(t)
	dir := t.TempDir()
	write(t, filepath.Join(dir, "json.py"), "raise SystemExit('shadowed json')\n")
	write(t, filepath.Join(dir, "platform.py"), "raise SystemExit('shadowed platform')\n")
	in, err := FindInterpreter(InterpreterOptions{Flag: py, ProjectDir: dir, Getenv: envOf(nil)})
	if err != nil || in.Version != version {
		t.Fatalf("%v %+v", err, in)
	}
}

func TestRequiresPythonSpecifiers(t *testing.T) {
	v := [3]int{3, 10, 4}
	cases := map[string]bool{
		">=3.9": true, ">=3.11": false, "<3.10": false, "<=3.10": false, "<=3.10.4": true, ">3.10": true,
		"==3.10.*": true, "==3.9.*": false, "!=3.10.*": false, "!=3.9.*": true, "~=3.9": true, "~=3.10.5": false,
		"~=3.10.1": true, ">=3.8, <4": true, ">=3.8,<3.10": false, "==3.10.4": true, "== 3.10": false, "===3.10.4": true,
		"": true, " >= 3.9 , != 3.10.3 ": true,
	}
	for spec, want := range cases {
		got, err := RequiresPython{Spec: spec}.Allows(v)
		if err != nil || got != want {
			t.Errorf("%q allows 3.10.4: %v (%v), want %v", spec, got, err, want)
		}
	}
	for _, bad := range []string{"3.9", ">=3.x", ">=3.9a1", "~=3", ">=3.*", "=>3.9"} {
		if _, err := (RequiresPython{Spec: bad}).Allows(v); err == nil {
			t.Errorf("%q was read", bad)
		}
	}
}

func TestVersionPinFiles(t *testing.T) {
	cases := []struct{ name, text, want string }{
		{".python-version", "# pinned\n\n3.9.18\n3.11.7\n", "3.9.18"},
		{".python-version", "pypy3.10-7.3.12", "pypy3.10-7.3.12"},
		{".tool-versions", "nodejs 20\npython   3.12.1 system\n", "3.12.1"},
		{".tool-versions", "nodejs 20\n", ""},
	}
	for _, c := range cases {
		if got := pinRequest(c.name, c.text); got != c.want {
			t.Errorf("%s %q: %q, want %q", c.name, c.text, got, c.want)
		}
	}
	p := newPin("cpython-3.12", "", "")
	if p.Parts != 2 || !p.Matches([3]int{3, 12, 1}) || p.Matches([3]int{3, 11, 1}) {
		t.Errorf("cpython-3.12: %+v", p)
	}
	if p := newPin("system", "", ""); p.Parts != 0 || !p.Matches([3]int{3, 6, 0}) {
		t.Errorf("system: %+v", p)
	}
	// A FIFO .python-version is refused, not read.
	dir := t.TempDir()
	if err := mkfifo(filepath.Join(dir, ".python-version")); err != nil {
		t.Skip(err)
	}
	if _, err := FindVersionPin(dir, envOf(nil)); err == nil || !strings.Contains(err.Error(), "FIFO") {
		t.Fatalf("FIFO pin: %v", err)
	}
}
