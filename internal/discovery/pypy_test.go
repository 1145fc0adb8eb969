package discovery

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// fakePyPy writes an executable that answers the kit's probe as PyPy 3.10 would.
func fakePyPy(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "pypy3.10")
	script := "#!/bin/sh\nprintf '\\nASTRABOX-PROBE:{\"version\": [3, 10, 14], \"implementation\": \"PyPy\", \"executable\": \"%s\"}\\n' \"$0\"\n"
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPinParsesImplementation(t *testing.T) {
	for req, want := range map[string]struct {
		impl  string
		parts int
	}{"pypy3.10": {"PyPy", 2}, "pypy3.10-7.3.17": {"PyPy", 2}, "PyPy3": {"PyPy", 1}, "3.10": {"", 2}, "graalpy3.11": {"GraalVM", 2}} {
		p := newPin(req, "", "")
		if p.Implementation != want.impl || p.Parts != want.parts {
			t.Errorf("%s: implementation %q parts %d, want %q %d", req, p.Implementation, p.Parts, want.impl, want.parts)
		}
	}
	pin := newPin("pypy3.10", "", "")
	if pin.Accepts(&Interpreter{Version: [3]int{3, 10, 14}, Implementation: "CPython"}) {
		t.Error("a pypy3.10 pin accepts CPython 3.10")
	}
	if !pin.Accepts(&Interpreter{Version: [3]int{3, 10, 14}, Implementation: "PyPy"}) {
		t.Error("a pypy3.10 pin refuses PyPy 3.10")
	}
}

// TestPyPyPinRunsPyPyOrIsRefused: a project pinned to pypy3.10 gets PyPy when one is found, and an error
// (never CPython) when only CPython is on PATH.
func TestPyPyPinRunsPyPyOrIsRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python")
	}
	cpython, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3")
	}
	project := t.TempDir()
	if err := os.WriteFile(filepath.Join(project, ".python-version"), []byte("pypy3.10\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	env := func(k string) string {
		if k == "HOME" {
			return bin // no pyenv, asdf or mise installs
		}
		return ""
	}
	cpythonOnly := func(name string) (string, error) {
		if name == "python3" {
			return cpython, nil
		}
		return "", exec.ErrNotFound
	}
	in, err := FindInterpreter(InterpreterOptions{ProjectDir: project, Getenv: env, LookPath: cpythonOnly})
	var de *Error
	if err == nil || !errors.As(err, &de) || !strings.Contains(err.Error(), `PyPy "pypy3.10"`) {
		t.Fatalf("only CPython on PATH: chose %+v, err %v; want the pin refused", in, err)
	}
	if !strings.Contains(err.Error(), "is Python 3.") {
		t.Errorf("the refusal does not say why CPython was passed over: %v", err)
	}
	pypy := fakePyPy(t, bin)
	withPyPy := func(name string) (string, error) {
		if name == "pypy3.10" {
			return pypy, nil
		}
		return cpythonOnly(name)
	}
	in, err = FindInterpreter(InterpreterOptions{ProjectDir: project, Getenv: env, LookPath: withPyPy})
	if err != nil || in.Implementation != "PyPy" || in.Path != pypy {
		t.Fatalf("PyPy on PATH: chose %+v, err %v", in, err)
	}
}
