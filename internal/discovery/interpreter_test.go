package discovery

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// realPython returns a CPython 3.9+ interpreter to link fake environments to.
func realPython(t *testing.T) (string, [3]int) {
	t.Helper()
	for _, c := range []string{"/root/.pyenv/versions/3.11.7/bin/python3.11", "/root/.pyenv/versions/3.12.1/bin/python3.12"} {
		if isExecutable(c) {
			in, err := probe(c, "test")
			if err != nil {
				t.Fatal(err)
			}
			return c, in.Version
		}
	}
	p, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3")
	}
	in, err := probe(p, "test")
	if err != nil {
		t.Skip(err)
	}
	return p, in.Version
}

// fakeEnv makes dir/bin/python a symlink to py, with a pyvenv.cfg when venv is true.
func fakeEnv(t *testing.T, dir, py string, venv bool) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "bin", "python")
	if err := os.Symlink(py, link); err != nil {
		t.Fatal(err)
	}
	if venv {
		cfg := fmt.Sprintf("home = %s\ninclude-system-site-packages = false\n", filepath.Dir(py))
		if err := os.WriteFile(filepath.Join(dir, "pyvenv.cfg"), []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return link
}

func TestFindInterpreterRules(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python")
	}
	py, version := realPython(t)
	root := t.TempDir()
	flagPy := fakeEnv(t, filepath.Join(root, "flag-env"), py, true)
	envPy := fakeEnv(t, filepath.Join(root, "astrabox-env"), py, true)
	venv := filepath.Join(root, "active-venv")
	venvPy := fakeEnv(t, venv, py, true)
	notVenv := filepath.Join(root, "not-a-venv") // bin/python but no pyvenv.cfg
	fakeEnv(t, notVenv, py, false)
	conda := filepath.Join(root, "conda")
	condaPy := fakeEnv(t, conda, py, false)
	pathPy := fakeEnv(t, filepath.Join(root, "on-path"), py, false)

	// A project two levels below a directory holding .venv.
	withDotVenv := filepath.Join(root, "ws")
	dotVenvPy := fakeEnv(t, filepath.Join(withDotVenv, ".venv"), py, true)
	project := filepath.Join(withDotVenv, "group", "project")
	// A project whose .venv is a file naming an environment elsewhere, by a relative path.
	withFile := filepath.Join(root, "filews")
	fileVenvPy := fakeEnv(t, filepath.Join(root, "elsewhere-env"), py, true)
	fileProject := filepath.Join(withFile, "project")
	for _, d := range []string{project, fileProject} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(fileProject, ".venv"), []byte("../../elsewhere-env\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bare := filepath.Join(root, "bare")
	if err := os.MkdirAll(bare, 0o755); err != nil {
		t.Fatal(err)
	}

	lookPath := func(name string) (string, error) {
		if name == "python3" {
			return pathPy, nil
		}
		if name == "custom-python" {
			return flagPy, nil
		}
		return "", exec.ErrNotFound
	}
	all := map[string]string{"ASTRABOX_PYTHON": envPy, "VIRTUAL_ENV": venv, "CONDA_PREFIX": conda}
	without := func(keys ...string) map[string]string {
		m := map[string]string{}
		for k, v := range all {
			m[k] = v
		}
		for _, k := range keys {
			delete(m, k)
		}
		return m
	}
	cases := []struct {
		name       string
		flag       string
		env        map[string]string
		projectDir string
		wantPath   string
		wantReason string
	}{
		{"flag first", flagPy, all, project, flagPy, "--python flag"},
		{"flag as a command name", "custom-python", all, project, flagPy, "--python flag"},
		{"ASTRABOX_PYTHON", "", all, project, envPy, "ASTRABOX_PYTHON=" + envPy},
		{"VIRTUAL_ENV when the project has no .venv", "", without("ASTRABOX_PYTHON"), bare, venvPy, "VIRTUAL_ENV=" + venv},
		{"the project's .venv over another VIRTUAL_ENV", "", without("ASTRABOX_PYTHON"), project, dotVenvPy,
			".venv at " + filepath.Join(withDotVenv, ".venv") + "; passed over: VIRTUAL_ENV=" + venv +
				" (it is not the project's environment " + filepath.Join(withDotVenv, ".venv") + ")"},
		{"VIRTUAL_ENV without pyvenv.cfg is skipped", "", map[string]string{"VIRTUAL_ENV": notVenv, "CONDA_PREFIX": conda}, bare,
			condaPy, "CONDA_PREFIX=" + conda + "; passed over: VIRTUAL_ENV=" + notVenv + " (has no pyvenv.cfg, so it is not a virtual environment)"},
		{".venv in a parent", "", without("ASTRABOX_PYTHON", "VIRTUAL_ENV"), project, dotVenvPy, ".venv at " + filepath.Join(withDotVenv, ".venv")},
		{".venv file", "", without("ASTRABOX_PYTHON", "VIRTUAL_ENV"), fileProject, fileVenvPy,
			".venv file " + filepath.Join(fileProject, ".venv") + " -> " + filepath.Join(root, "elsewhere-env")},
		{"CONDA_PREFIX", "", without("ASTRABOX_PYTHON", "VIRTUAL_ENV"), bare, condaPy, "CONDA_PREFIX=" + conda},
		{"python3 on PATH", "", nil, bare, pathPy, "python3 on PATH"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in, err := FindInterpreter(InterpreterOptions{Flag: c.flag, ProjectDir: c.projectDir, LookPath: lookPath,
				Getenv: func(k string) string { return c.env[k] }})
			if err != nil {
				t.Fatal(err)
			}
			if in.Path != c.wantPath || in.Reason != c.wantReason {
				t.Errorf("got %s (%s), want %s (%s)", in.Path, in.Reason, c.wantPath, c.wantReason)
			}
			if in.Version != version || in.Implementation != "CPython" {
				t.Errorf("probe = %v %s, want %v CPython", in.Version, in.Implementation, version)
			}
		})
	}
}

func TestFindInterpreterErrors(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python")
	}
	noPath := func(string) (string, error) { return "", exec.ErrNotFound }
	empty := func(string) string { return "" }
	dir := t.TempDir()

	_, err := FindInterpreter(InterpreterOptions{Getenv: empty, LookPath: noPath, ProjectDir: dir})
	var e *Error
	if !errors.As(err, &e) || !strings.Contains(err.Error(), "no Python interpreter found") || e.Hint == "" {
		t.Errorf("nothing found: %v", err)
	}
	_, err = FindInterpreter(InterpreterOptions{Flag: filepath.Join(dir, "nope"), Getenv: empty, LookPath: noPath})
	if !errors.As(err, &e) || !strings.Contains(err.Error(), "--python flag does not exist") {
		t.Errorf("missing flag interpreter: %v", err)
	}
	_, err = FindInterpreter(InterpreterOptions{Getenv: func(k string) string {
		if k == "ASTRABOX_PYTHON" {
			return "no-such-python"
		}
		return ""
	}, LookPath: noPath})
	if !errors.As(err, &e) || !strings.Contains(err.Error(), `ASTRABOX_PYTHON=no-such-python names "no-such-python", which is not on PATH`) {
		t.Errorf("ASTRABOX_PYTHON not on PATH: %v", err)
	}
	notPy := filepath.Join(dir, "not-python")
	if err := os.WriteFile(notPy, []byte("#!/bin/sh\necho hi\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err = FindInterpreter(InterpreterOptions{Flag: notPy, Getenv: empty, LookPath: noPath})
	if !errors.As(err, &e) || !strings.Contains(err.Error(), "does not look like Python") {
		t.Errorf("not python: %v", err)
	}

	// Old interpreters are refused with the version they have.
	olds, _ := filepath.Glob("/root/.pyenv/versions/3.8.*/bin/python3")
	more, _ := filepath.Glob("/root/.pyenv/versions/2.7.*/bin/python2")
	for _, old := range append(olds, more...) {
		ver := filepath.Base(filepath.Dir(filepath.Dir(old)))
		_, err := FindInterpreter(InterpreterOptions{Flag: old, Getenv: empty, LookPath: noPath})
		if !errors.As(err, &e) || !strings.Contains(err.Error(), "is Python "+ver+"; astrabox needs Python 3.9 or newer") ||
			!strings.Contains(e.Hint, "--python") {
			t.Errorf("old interpreter %s: %v", old, err)
		}
	}
}
