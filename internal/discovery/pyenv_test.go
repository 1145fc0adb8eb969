package discovery

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// fakePyenv is a pyenv root laid out as pyenv 2.x lays it out: the prototype shim of pyenv-rehash in
// shims/python3, a pyenv command in libexec that logs each run to log and runs versions/3.99.0/bin/PROGRAM,
// and version 3.99.0 whose bin/python3 is interp (an empty executable file when "").
type fakePyenv struct {
	root, shim, log, target string
}

func pyenvShimText(root, command string) string {
	return fmt.Sprintf(`#!/usr/bin/env bash
set -e
[ -n "$PYENV_DEBUG" ] && set -x

program="${0##*/}"

export PYENV_ROOT="%s"
SHIM_PATH=${0%%/*}
if [[ $SHIM_PATH != "%s/shims" ]]; then
  export _PYENV_SHIM_PATH="$SHIM_PATH"
fi
exec "%s" exec "$program" "$@"
`, root, root, command)
}

func newFakePyenv(t *testing.T, interp string) *fakePyenv {
	t.Helper()
	root := filepath.Join(t.TempDir(), "pyenv")
	f := &fakePyenv{root: root, shim: filepath.Join(root, "shims", "python3"), log: filepath.Join(root, "exec.log"),
		target: filepath.Join(root, "versions", "3.99.0", "bin", "python3")}
	for _, d := range []string{"shims", "libexec", "versions/3.99.0/bin"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	command := filepath.Join(root, "libexec", "pyenv")
	writeMode(t, command, fmt.Sprintf("#!/bin/sh\necho \"$1 $2\" >> %s\nprog=$2\nshift 2\nexec %s/versions/3.99.0/bin/\"$prog\" \"$@\"\n", f.log, root), 0o755)
	writeMode(t, f.shim, pyenvShimText(root, command), 0o755)
	if interp == "" {
		writeMode(t, f.target, "", 0o755)
	} else if err := os.Symlink(interp, f.target); err != nil {
		t.Fatal(err)
	}
	return f
}

func writeMode(t *testing.T, path, text string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), mode); err != nil {
		t.Fatal(err)
	}
}

// TestPyenvTargetRules checks each rule of pyenvTarget: the interpreter behind a pyenv shim is named only
// when pyenv's own files decide it, and the shim is left to decide (the probe runs it) in every other case.
func TestPyenvTargetRules(t *testing.T) {
	cases := []struct {
		name  string
		setup func(t *testing.T, f *fakePyenv, proj string) map[string]string
		want  bool // the target is named
		why   string
	}{
		{"the project's .python-version", func(t *testing.T, f *fakePyenv, proj string) map[string]string {
			writeMode(t, filepath.Join(proj, ".python-version"), "# pinned\n\n3.99.0 extra\n", 0o644)
			return nil
		}, true, ""},
		{"a .python-version above the project", func(t *testing.T, f *fakePyenv, proj string) map[string]string {
			writeMode(t, filepath.Join(filepath.Dir(proj), ".python-version"), "3.99.0\r\n", 0o644)
			return nil
		}, true, ""},
		{"PYENV_VERSION over the file", func(t *testing.T, f *fakePyenv, proj string) map[string]string {
			writeMode(t, filepath.Join(proj, ".python-version"), "system\n", 0o644)
			return map[string]string{"PYENV_VERSION": "3.99.0:system"}
		}, true, ""},
		{"the global version file", func(t *testing.T, f *fakePyenv, proj string) map[string]string {
			writeMode(t, filepath.Join(f.root, "version"), "3.99.0\n", 0o644)
			return nil
		}, true, ""},
		{"no version anywhere: system", func(t *testing.T, f *fakePyenv, proj string) map[string]string { return nil }, false, "not a pyenv version"},
		{"an empty .python-version: system", func(t *testing.T, f *fakePyenv, proj string) map[string]string {
			writeMode(t, filepath.Join(proj, ".python-version"), "", 0o644)
			writeMode(t, filepath.Join(f.root, "version"), "3.99.0\n", 0o644)
			return nil
		}, false, "not a pyenv version"},
		{"a prefix pyenv-latest would resolve", func(t *testing.T, f *fakePyenv, proj string) map[string]string {
			return map[string]string{"PYENV_VERSION": "3.99"}
		}, false, "not installed"},
		{"a path in the version", func(t *testing.T, f *fakePyenv, proj string) map[string]string {
			return map[string]string{"PYENV_VERSION": "../versions/3.99.0"}
		}, false, "not a pyenv version"},
		{"PYENV_DIR set", func(t *testing.T, f *fakePyenv, proj string) map[string]string {
			return map[string]string{"PYENV_VERSION": "3.99.0", "PYENV_DIR": proj}
		}, false, "PYENV_DIR"},
		{"the version lacks the program", func(t *testing.T, f *fakePyenv, proj string) map[string]string {
			if err := os.Remove(f.target); err != nil {
				t.Fatal(err)
			}
			return map[string]string{"PYENV_VERSION": "3.99.0"}
		}, false, "no executable"},
		{"the program is not executable", func(t *testing.T, f *fakePyenv, proj string) map[string]string {
			if err := os.Chmod(f.target, 0o644); err != nil {
				t.Fatal(err)
			}
			return map[string]string{"PYENV_VERSION": "3.99.0"}
		}, false, "no executable"},
		{"an unknown which hook in the root", func(t *testing.T, f *fakePyenv, proj string) map[string]string {
			writeMode(t, filepath.Join(f.root, "pyenv.d", "which", "mine.bash"), "PYENV_COMMAND_PATH=/elsewhere\n", 0o644)
			return map[string]string{"PYENV_VERSION": "3.99.0"}
		}, false, "unknown"},
		{"an unknown exec hook of a plugin", func(t *testing.T, f *fakePyenv, proj string) map[string]string {
			writeMode(t, filepath.Join(f.root, "plugins", "p", "etc", "pyenv.d", "exec", "x.bash"), "true\n", 0o644)
			return map[string]string{"PYENV_VERSION": "3.99.0"}
		}, false, "unknown"},
		{"an unknown version-name hook on PYENV_HOOK_PATH", func(t *testing.T, f *fakePyenv, proj string) map[string]string {
			hooks := filepath.Join(t.TempDir(), "hooks")
			writeMode(t, filepath.Join(hooks, "version-name", "v.bash"), "PYENV_VERSION=system\n", 0o644)
			return map[string]string{"PYENV_VERSION": "3.99.0", "PYENV_HOOK_PATH": hooks}
		}, false, "unknown"},
		{"a hook of another command is not on the way", func(t *testing.T, f *fakePyenv, proj string) map[string]string {
			writeMode(t, filepath.Join(f.root, "pyenv.d", "rehash", "r.bash"), "true\n", 0o644)
			return map[string]string{"PYENV_VERSION": "3.99.0"}
		}, true, ""},
		{"a shim that is not pyenv's prototype", func(t *testing.T, f *fakePyenv, proj string) map[string]string {
			writeMode(t, f.shim, strings.Replace(pyenvShimText(f.root, filepath.Join(f.root, "libexec", "pyenv")), "set -e\n", "set -e\nexport PYENV_VERSION=system\n", 1), 0o755)
			return map[string]string{"PYENV_VERSION": "3.99.0"}
		}, false, "not pyenv's shim"},
		{"a shim written for another root", func(t *testing.T, f *fakePyenv, proj string) map[string]string {
			writeMode(t, f.shim, pyenvShimText("/opt/pyenv", filepath.Join(f.root, "libexec", "pyenv")), 0o755)
			return map[string]string{"PYENV_VERSION": "3.99.0"}
		}, false, "outside its root"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFakePyenv(t, "")
			proj := filepath.Join(t.TempDir(), "work", "proj")
			if err := os.MkdirAll(proj, 0o755); err != nil {
				t.Fatal(err)
			}
			env := c.setup(t, f, proj)
			got, why := pyenvTarget(f.shim, proj, envOf(env))
			if c.want && (got != f.target || why != "") {
				t.Fatalf("got %q (%s), want %q", got, why, f.target)
			}
			if !c.want && (got != "" || !strings.Contains(why, c.why)) {
				t.Fatalf("got %q (%s), want no target because %q", got, why, c.why)
			}
		})
	}
}

// realInterpreter is the interpreter behind python3 on PATH (its sys.executable).
func realInterpreter(t *testing.T) string {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3 on PATH")
	}
	out, err := exec.Command(py, "-c", "import sys; print(sys.executable)").Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

// TestPyenvShimResolvedWithoutRunningIt checks that choosing a pyenv shim whose interpreter pyenv's files
// decide starts no pyenv (counted by the fake pyenv's log) and gives the interpreter the shim would have run;
// that a shim pyenvTarget cannot read is run once, to the same answer.
func TestPyenvShimResolvedWithoutRunningIt(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python")
	}
	real := realInterpreter(t)
	for _, k := range []string{"PYENV_VERSION", "PYENV_DIR", "PYENV_HOOK_PATH"} {
		t.Setenv(k, "")
	}
	for _, c := range []struct {
		name string
		hook bool
		runs int
	}{{"decided by the files", false, 0}, {"an unknown hook", true, 1}} {
		t.Run(c.name, func(t *testing.T) {
			f := newFakePyenv(t, real)
			proj := t.TempDir()
			writeMode(t, filepath.Join(proj, ".python-version"), "3.99.0\n", 0o644)
			if c.hook {
				writeMode(t, filepath.Join(f.root, "pyenv.d", "exec", "mine.bash"), "true\n", 0o644)
			}
			in, err := FindInterpreter(InterpreterOptions{Flag: f.shim, Getenv: func(string) string { return "" }, ProjectDir: proj})
			if err != nil {
				t.Fatal(err)
			}
			log, _ := os.ReadFile(f.log)
			if runs := strings.Count(string(log), "\n"); runs != c.runs {
				t.Errorf("pyenv ran %d times (%q), want %d", runs, log, c.runs)
			}
			if in.Path != f.target || in.Via != f.shim {
				t.Errorf("path %q via %q, want %q via the shim", in.Path, in.Via, f.target)
			}
			if in.Version[0] != 3 {
				t.Errorf("version %v: the interpreter was not probed", in.Version)
			}
		})
	}
}

// TestPyenvTargetMatchesPyenvWhich checks pyenvTarget against the pyenv installed on this machine, when there
// is one and it decides: the interpreter named is the one `pyenv which` names from the same directory.
func TestPyenvTargetMatchesPyenvWhich(t *testing.T) {
	if testing.Short() {
		t.Skip("runs pyenv")
	}
	pyenv, err := exec.LookPath("pyenv")
	if err != nil {
		t.Skip("no pyenv")
	}
	rootOut, err := exec.Command(pyenv, "root").Output()
	if err != nil {
		t.Skip("pyenv root failed")
	}
	shim := filepath.Join(strings.TrimSpace(string(rootOut)), "shims", "python3")
	dir := t.TempDir()
	got, why := pyenvTarget(shim, dir, os.Getenv)
	if got == "" {
		t.Skipf("this pyenv is left to its shim: %s", why)
	}
	cmd := exec.Command(pyenv, "which", "python3")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.TrimSpace(string(out)); got != want {
		t.Fatalf("pyenvTarget named %q, pyenv which names %q", got, want)
	}
}
