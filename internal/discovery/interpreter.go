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

// ProbeTimeout bounds the interpreter probe of FindInterpreter.
const ProbeTimeout = 10 * time.Second

// InterpreterOptions are the inputs of FindInterpreter. Getenv and LookPath default to os.Getenv and
// exec.LookPath when nil.
type InterpreterOptions struct {
	// Flag is the value of --python ("" when not given): a path, or a command name looked up on PATH.
	Flag string
	// Getenv reads the environment (ASTRABOX_PYTHON, VIRTUAL_ENV, CONDA_PREFIX).
	Getenv func(string) string
	// ProjectDir is where the search for a .venv starts (it then goes up through the parents).
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
	// Reason says which rule chose it, e.g. "--python flag" or "VIRTUAL_ENV=/x".
	Reason string
	// Via is the launcher script (a pyenv or asdf shim) that was found, when Path is the interpreter behind it.
	Via string
}

// VersionString renders the version as "3.11.7".
func (i *Interpreter) VersionString() string {
	return fmt.Sprintf("%d.%d.%d", i.Version[0], i.Version[1], i.Version[2])
}

// FindInterpreter chooses the Python interpreter, in this order: the --python flag, ASTRABOX_PYTHON, the
// active VIRTUAL_ENV (only a real venv, holding pyvenv.cfg), a .venv in the project directory or a parent
// (a directory with bin/python, or a file holding the path of one), CONDA_PREFIX, then python3 on PATH. An
// explicit choice (flag, ASTRABOX_PYTHON) that does not work is an error; the other rules are skipped when
// their interpreter does not exist. The chosen interpreter is probed and must be Python 3.9 or newer.
func FindInterpreter(o InterpreterOptions) (*Interpreter, error) {
	getenv, lookPath := o.Getenv, o.LookPath
	if getenv == nil {
		getenv = os.Getenv
	}
	if lookPath == nil {
		lookPath = exec.LookPath
	}
	explicit := func(value, reason, how string) (*Interpreter, error) {
		path := value
		if !strings.ContainsRune(value, filepath.Separator) {
			p, err := lookPath(value)
			if err != nil {
				return nil, &Error{Message: fmt.Sprintf("%s names %q, which is not on PATH", reason, value), Err: err, Hint: how}
			}
			path = p
		}
		if !isExecutable(path) {
			return nil, &Error{File: path, Message: fmt.Sprintf("the interpreter given by %s does not exist or is not executable", reason), Hint: how}
		}
		return probe(path, reason)
	}
	if o.Flag != "" {
		return explicit(o.Flag, "--python flag", "pass the path of a Python 3.9+ interpreter, e.g. --python .venv/bin/python")
	}
	if v := getenv("ASTRABOX_PYTHON"); v != "" {
		return explicit(v, "ASTRABOX_PYTHON="+v, "set ASTRABOX_PYTHON to the path of a Python 3.9+ interpreter, or unset it")
	}
	if v := getenv("VIRTUAL_ENV"); v != "" {
		if fileExists(filepath.Join(v, "pyvenv.cfg")) {
			if py := venvPython(v); py != "" {
				return probe(py, "VIRTUAL_ENV="+v)
			}
		}
	}
	if o.ProjectDir != "" {
		if py, reason := dotVenv(o.ProjectDir); py != "" {
			return probe(py, reason)
		}
	}
	if v := getenv("CONDA_PREFIX"); v != "" {
		if py := venvPython(v); py != "" {
			return probe(py, "CONDA_PREFIX="+v)
		}
	}
	p, err := lookPath("python3")
	if err != nil {
		return nil, &Error{Message: "no Python interpreter found: no --python, ASTRABOX_PYTHON, active virtualenv, .venv, conda environment or python3 on PATH",
			Err: err, Hint: "install Python 3.9+ or pass --python /path/to/python"}
	}
	return probe(p, "python3 on PATH")
}

// venvPython returns dir/bin/python (or python3) when it is executable.
func venvPython(dir string) string {
	for _, n := range []string{"python", "python3"} {
		if p := filepath.Join(dir, "bin", n); isExecutable(p) {
			return p
		}
	}
	return ""
}

// dotVenv looks for .venv in start and its parents: a directory holding bin/python, or a file holding the
// path of a virtual environment (or of an interpreter), relative paths resolved against the file's
// directory.
func dotVenv(start string) (string, string) {
	abs, err := filepath.Abs(start)
	if err != nil {
		return "", ""
	}
	for d := abs; ; {
		cand := filepath.Join(d, ".venv")
		if st, err := os.Stat(cand); err == nil {
			if st.IsDir() {
				if py := venvPython(cand); py != "" {
					return py, ".venv at " + cand
				}
			} else if b, err := os.ReadFile(cand); err == nil {
				target := strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0])
				if target != "" {
					if !filepath.IsAbs(target) {
						target = filepath.Join(d, target)
					}
					if st, err := os.Stat(target); err == nil && st.IsDir() {
						if py := venvPython(target); py != "" {
							return py, ".venv file " + cand + " -> " + target
						}
					} else if isExecutable(target) {
						return target, ".venv file " + cand + " -> " + target
					}
				}
			}
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", ""
		}
		d = parent
	}
}

// probeScript prints the interpreter's version as JSON; it runs on Python 2 too, so that an old interpreter
// gets a clear message rather than a syntax error.
const probeScript = `import sys, json, platform
sys.stdout.write("\nASTRABOX-PROBE:" + json.dumps({"version": list(sys.version_info[:3]), "implementation": platform.python_implementation(), "executable": sys.executable}) + "\n")
`

// probe runs the interpreter to read its version and checks it is recent enough.
func probe(path, reason string) (*Interpreter, error) {
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	ctx, cancel := context.WithTimeout(context.Background(), ProbeTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "-E", "-s", "-c", probeScript)
	cmd.Dir = os.TempDir()
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
	// A launcher script (a pyenv or asdf shim) costs a shell start on every replica: use the interpreter
	// behind it. A venv's python is its own sys.executable, so venvs are kept as they are.
	if exe := res.Executable; exe != "" && exe != path && filepath.IsAbs(exe) && isShim(path) {
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

// isShim tells whether an interpreter path is a launcher script rather than a binary (it starts with "#!").
func isShim(path string) bool {
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
