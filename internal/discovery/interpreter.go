package discovery

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// MinPython is the oldest Python version astrabox supports.
var MinPython = [3]int{3, 9, 0}

// ProbeTimeout bounds the interpreter probe of FindInterpreter. A pyenv or asdf shim costs a shell and a
// few processes before Python starts; 10 s was exceeded on a loaded machine, so the bound is generous.
const ProbeTimeout = 30 * time.Second

// InterpreterOptions are the inputs of FindInterpreter. Getenv and LookPath default to os.Getenv and
// exec.LookPath when nil.
type InterpreterOptions struct {
	// Flag is the value of --python ("" when not given): a path, or a command name looked up on PATH.
	Flag string
	// Setting is the project's python setting ("" when none): a path, or a command name looked up on PATH;
	// SettingReason says where it is set ("python = \"/usr/bin/python3\" in pyproject.toml:12").
	Setting, SettingReason string
	// Getenv reads the environment (ASTRABOX_PYTHON, VIRTUAL_ENV, CONDA_PREFIX, PYENV_VERSION, HOME, ...).
	Getenv func(string) string
	// ProjectDir is the project root: the probe runs there (so that a pyenv, asdf or mise shim picks the
	// project's version), the search for a .venv starts there, and its requires-python is checked.
	ProjectDir string
	// LookPath finds a command on PATH.
	LookPath func(string) (string, error)
}

// Interpreter is the Python interpreter chosen to run the provider.
type Interpreter struct {
	// Path is the interpreter's path as found (symlinks are kept: a venv's python is one).
	Path string
	// Version is (major, minor, micro).
	Version [3]int
	// Implementation is platform.python_implementation(), e.g. "CPython".
	Implementation string
	// Rule says which rule chose it, e.g. "--python flag", "VIRTUAL_ENV=/x" or "python3 on PATH, Python
	// 3.9 pinned by /p/.python-version".
	Rule string
	// Reason is Rule followed by the candidates passed over ("; passed over: ...") so that --verbose shows
	// the whole decision.
	Reason string
	// Via is the launcher script (a pyenv or asdf shim) that was found, when Path is the interpreter behind it.
	Via string
	// Pin is the project's .python-version or .tool-versions pin, nil when there is none.
	Pin *VersionPin
	// Rejected lists the candidates passed over, in search order, each with why.
	Rejected []Rejection
	// Warnings are things the user should hear even without --verbose (an active virtual environment
	// ignored, an environment that no longer works, a pin the chosen interpreter does not match).
	Warnings []string
}

// Rejection is an interpreter candidate that was passed over.
type Rejection struct {
	// Candidate names it ("VIRTUAL_ENV=/x", ".venv at /p/.venv", "/usr/bin/python3").
	Candidate string
	// Why says why it was passed over.
	Why string
}

// VersionString renders the version as "3.11.7".
func (i *Interpreter) VersionString() string {
	return fmt.Sprintf("%d.%d.%d", i.Version[0], i.Version[1], i.Version[2])
}

// FindInterpreter chooses the Python interpreter, in this order: the --python flag, ASTRABOX_PYTHON, the
// project's python setting ([tool.astrabox] python), the
// project's .venv (in the project directory or a parent: a directory, or a file naming an environment), the
// active VIRTUAL_ENV when the project has no .venv of its own (as uv does: another project's active
// environment is ignored, with a warning), CONDA_PREFIX, then python3 on PATH run from the project
// directory, so that a pyenv, asdf or mise shim picks the project's version, and held to the project's
// .python-version or .tool-versions pin (falling back to pythonX.Y on PATH and pyenv, asdf and mise
// installs of that version). An explicit choice (flag, ASTRABOX_PYTHON) that does not work is an error;
// other candidates that do not work are passed over and listed in Rejected. The chosen interpreter must
// be Python 3.9 or newer and satisfy the project's requires-python (else an *Error, exit code 2).
func FindInterpreter(o InterpreterOptions) (*Interpreter, error) {
	s := &search{opts: o, getenv: o.Getenv, lookPath: o.LookPath, dir: o.ProjectDir}
	if s.getenv == nil {
		s.getenv = os.Getenv
	}
	if s.lookPath == nil {
		s.lookPath = exec.LookPath
	}
	if s.dir != "" {
		if abs, err := filepath.Abs(s.dir); err == nil {
			s.dir = abs
		}
	}
	if s.dir != "" {
		pin, err := FindVersionPin(s.dir, s.getenv)
		if err != nil {
			return nil, err
		}
		s.pin = pin
	}
	in, err := s.find()
	if err != nil {
		return nil, err
	}
	in.Rule, in.Rejected, in.Warnings, in.Pin = in.Reason, s.rejected, append(in.Warnings, s.warnings...), s.pin
	explicit := s.opts.Flag != "" || s.getenv("ASTRABOX_PYTHON") != "" || s.opts.Setting != ""
	if pin := in.Pin; pin != nil && !explicit && !pin.Accepts(in) {
		in.Warnings = append(in.Warnings, fmt.Sprintf("%s pins %s, but the interpreter chosen by %s is %s; "+
			"recreate the environment with that version, or change the pin", pin.Source, pin.Label(), in.Rule, describe(in)))
	}
	if len(s.rejected) > 0 {
		parts := make([]string, len(s.rejected))
		for i, r := range s.rejected {
			parts[i] = r.Candidate + " (" + r.Why + ")"
		}
		in.Reason += "; passed over: " + strings.Join(parts, ", ")
	}
	if s.dir != "" {
		if err := checkRequiresPython(s.dir, in); err != nil {
			return nil, err
		}
	}
	return in, nil
}

// checkRequiresPython refuses an interpreter the project's requires-python excludes.
func checkRequiresPython(dir string, in *Interpreter) error {
	req, ok, err := readRequiresPython(dir)
	if err != nil || !ok {
		return err
	}
	allowed, err := req.Allows(in.Version)
	if err != nil {
		in.Warnings = append(in.Warnings, fmt.Sprintf("%s:%d: cannot read requires-python %q (%v); it is not checked", req.File, req.Line, req.Spec, err))
		return nil
	}
	if allowed {
		return nil
	}
	return &Error{File: req.File, Line: req.Line,
		Message: fmt.Sprintf("the project requires Python %s, but the interpreter %s (chosen by %s) is Python %s",
			req.Spec, in.Path, in.Rule, in.VersionString()),
		Hint: "pass an interpreter the project supports with --python (or create .venv with one), or change requires-python"}
}

// search is the state of one FindInterpreter call.
type search struct {
	opts     InterpreterOptions
	getenv   func(string) string
	lookPath func(string) (string, error)
	dir      string
	pin      *VersionPin
	rejected []Rejection
	warnings []string
}

func (s *search) reject(candidate, why string) {
	s.rejected = append(s.rejected, Rejection{Candidate: candidate, Why: why})
}

func (s *search) warn(format string, args ...any) {
	s.warnings = append(s.warnings, fmt.Sprintf(format, args...))
}

// probe runs the probe from the project directory.
func (s *search) probe(path, reason string) (*Interpreter, error) {
	return probeIn(path, reason, s.dir)
}

// explicit resolves the interpreter named by --python or ASTRABOX_PYTHON.
func (s *search) explicit(value, reason, how string) (*Interpreter, error) {
	path := value
	if !strings.ContainsRune(value, filepath.Separator) {
		p, err := s.lookPath(value)
		if err != nil {
			return nil, &Error{Message: fmt.Sprintf("%s names %q, which is not on PATH", reason, value), Err: err, Hint: how}
		}
		path = p
	}
	if !isExecutable(path) {
		return nil, &Error{File: path, Message: fmt.Sprintf("the interpreter given by %s does not exist or is not executable", reason), Hint: how}
	}
	return s.probe(path, reason)
}

func (s *search) find() (*Interpreter, error) {
	if s.opts.Flag != "" {
		return s.explicit(s.opts.Flag, "--python flag", "pass the path of a Python 3.9+ interpreter, e.g. --python .venv/bin/python")
	}
	if v := s.getenv("ASTRABOX_PYTHON"); v != "" {
		return s.explicit(v, "ASTRABOX_PYTHON="+v, "set ASTRABOX_PYTHON to the path of a Python 3.9+ interpreter, or unset it")
	}
	if v := s.opts.Setting; v != "" {
		reason := s.opts.SettingReason
		if reason == "" {
			reason = "the python setting"
		}
		return s.explicit(v, reason, "set python in [tool.astrabox] to the path of a Python 3.9+ interpreter, or remove it")
	}
	var dot *envCandidate
	if s.dir != "" {
		dot = s.dotVenv(s.dir)
	}
	if v := s.getenv("VIRTUAL_ENV"); v != "" {
		if in := s.activeVenv(v, dot); in != nil {
			return s.probe(in.py, in.reason)
		}
	}
	if dot != nil {
		return s.probe(dot.py, dot.reason)
	}
	if v := s.getenv("CONDA_PREFIX"); v != "" {
		if py, why := envPython(v, false); py != "" {
			return s.probe(py, "CONDA_PREFIX="+v)
		} else {
			s.reject("CONDA_PREFIX="+v, why)
		}
	}
	if s.dir != "" {
		s.otherVenvs()
	}
	return s.onPath()
}

// probeScript prints the interpreter's version as JSON; it runs on Python 2 too, so that an old interpreter
// gets a clear message rather than a syntax error. It runs without site (-S) and reads the implementation from
// sys.implementation rather than importing platform: those two were most of its start (site processes every
// .pth file of the environment), and the probe is the first thing every run waits for. The names are
// platform.python_implementation()'s; an interpreter without sys.implementation (Python 2) still asks
// platform.
const probeScript = `import sys
sys.path[:] = [p for p in sys.path if p not in ("", ".")]
import json
names = {"cpython": "CPython", "pypy": "PyPy", "graalpy": "GraalVM", "ironpython": "IronPython"}
impl = names.get(getattr(getattr(sys, "implementation", None), "name", None))
if impl is None:
    import platform
    impl = platform.python_implementation()
sys.stdout.write("\nASTRABOX-PROBE:" + json.dumps({"version": list(sys.version_info[:3]), "implementation": impl, "executable": sys.executable}) + "\n")
`

// probe runs the interpreter from a temporary directory to read its version.
func probe(path, reason string) (*Interpreter, error) { return probeIn(path, reason, "") }

// probeIn runs the interpreter from dir (a temporary directory when "") to read its version, and checks it
// is recent enough. The probe drops the working directory from sys.path before importing anything, so a
// project's own json.py or platform.py cannot answer for the standard library.
func probeIn(path, reason, dir string) (*Interpreter, error) {
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	ctx, cancel := context.WithTimeout(context.Background(), ProbeTimeout)
	defer cancel()
	if dir == "" {
		tmp, err := usableTempDir()
		if err != nil {
			return nil, err
		}
		dir = tmp
	}
	// A pyenv shim whose interpreter can be told from pyenv's files is not run: the probe runs that
	// interpreter (the shim's shell and pyenv's scripts cost several times an interpreter start).
	run, target := path, ""
	if isShim(path) {
		if t, _ := pyenvTarget(path, dir, os.Getenv); t != "" {
			run, target = t, t
		}
	}
	cmd := exec.CommandContext(ctx, run, "-E", "-s", "-S", "-c", probeScript)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	setProcessGroup(cmd)
	cmd.WaitDelay = 2 * time.Second
	err := cmd.Run()
	if ctx.Err() == context.DeadlineExceeded {
		return nil, &Error{File: path, Message: fmt.Sprintf("the interpreter chosen by %s did not answer within %s", reason, ProbeTimeout),
			Err: ctx.Err(), Hint: "check that it starts normally, or pass another one with --python"}
	}
	if err != nil {
		return nil, &Error{File: path, Message: fmt.Sprintf("the interpreter chosen by %s failed to run", reason), Err: err,
			Hint: "it said: " + tail(stderr.String(), 400) + "; pass a working Python 3.9+ with --python"}
	}
	var res struct {
		Version        []int  `json:"version"`
		Implementation string `json:"implementation"`
		Executable     string `json:"executable"`
	}
	ok := false
	for _, line := range strings.Split(stdout.String(), "\n") {
		if rest, found := strings.CutPrefix(line, "ASTRABOX-PROBE:"); found {
			ok = json.Unmarshal([]byte(rest), &res) == nil && len(res.Version) == 3
		}
	}
	if !ok {
		return nil, &Error{File: path, Message: fmt.Sprintf("the program chosen by %s does not look like Python", reason),
			Err: errors.New(tail(stdout.String(), 200)), Hint: "pass a Python 3.9+ interpreter with --python"}
	}
	in := &Interpreter{Path: path, Version: [3]int{res.Version[0], res.Version[1], res.Version[2]},
		Implementation: res.Implementation, Reason: reason}
	if target != "" {
		in.Via, in.Path = path, target
	}
	// A launcher script (a pyenv or asdf shim) costs a shell start on every replica: use the interpreter
	// behind it. A venv's python is its own sys.executable, so venvs are kept as they are.
	if exe := res.Executable; exe != "" && exe != in.Path && filepath.IsAbs(exe) && isShim(in.Path) {
		if st, err := os.Stat(exe); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			in.Via = path
			in.Path = exe
		}
	}
	if versionLess(in.Version, MinPython) {
		return nil, &Error{File: path,
			Message: fmt.Sprintf("the interpreter chosen by %s is Python %s; astrabox needs Python %d.%d or newer", reason, in.VersionString(), MinPython[0], MinPython[1]),
			Hint:    "create the project's environment with a newer Python (python3.12 -m venv .venv), or pass one with --python"}
	}
	return in, nil
}

// isShim tells whether an interpreter path is a launcher rather than the interpreter: a script (it starts
// with "#!"), or anything in a directory named shims (pyenv, asdf and mise keep their shims there; mise's
// are links to its own binary).
func isShim(path string) bool {
	if filepath.Base(filepath.Dir(path)) == "shims" {
		return true
	}
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, 2)
	n, _ := f.Read(head)
	return n == 2 && string(head) == "#!"
}

func versionLess(a, b [3]int) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

func isExecutable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}
