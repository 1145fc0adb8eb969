package discovery

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// envCandidate is a virtual environment found for the project.
type envCandidate struct {
	dir    string // the environment's directory
	py     string // its interpreter
	reason string
}

// envPython returns dir/bin/python (or python3) when it is executable; otherwise "" and why not. A link
// whose target is gone (the Python it was made with was removed or upgraded) is called dangling. With
// needCfg, the directory must hold pyvenv.cfg (a venv or virtualenv).
func envPython(dir string, needCfg bool) (string, string) {
	if st, err := os.Stat(dir); err != nil {
		return "", "does not exist"
	} else if !st.IsDir() {
		return "", "is not a directory"
	}
	if needCfg && !fileExists(filepath.Join(dir, "pyvenv.cfg")) {
		return "", "has no pyvenv.cfg, so it is not a virtual environment"
	}
	for _, n := range []string{"python", "python3"} {
		p := filepath.Join(dir, "bin", n)
		if isExecutable(p) {
			return p, ""
		}
	}
	for _, n := range []string{"python", "python3"} {
		p := filepath.Join(dir, "bin", n)
		if target, err := os.Readlink(p); err == nil {
			return "", fmt.Sprintf("its %s is a dangling link to %s (the Python it was made with is gone)", p, target)
		}
	}
	return "", "has no executable bin/python"
}

// venvPython returns dir/bin/python (or python3) when it is executable.
func venvPython(dir string) string {
	py, _ := envPython(dir, false)
	return py
}

// recreateHint says how to rebuild a broken environment.
func recreateHint(dir string) string {
	return fmt.Sprintf("recreate it (python3 -m venv --clear %s, or uv venv) and reinstall the project into it (pip install -e .)", dir)
}

// dotVenv looks for .venv in start and its parents: a directory holding bin/python, or a file naming the
// environment, by path (relative to the file's directory) or by name (an environment of virtualenvwrapper
// in $WORKON_HOME, or of pyenv-virtualenv in $PYENV_ROOT/versions). A .venv that cannot be used is
// passed over with a warning, as uv warns about it, and the search goes on.
func (s *search) dotVenv(start string) *envCandidate {
	for d := start; ; {
		cand := filepath.Join(d, ".venv")
		if st, err := os.Stat(cand); err == nil && st.IsDir() {
			if py, why := envPython(cand, false); py != "" {
				return &envCandidate{dir: cand, py: py, reason: ".venv at " + cand}
			} else {
				s.reject(".venv at "+cand, why)
				s.warn("ignoring the virtual environment %s (%s); %s", cand, why, recreateHint(cand))
			}
		} else if err == nil {
			if c := s.dotVenvFile(d, cand); c != nil {
				return c
			}
		} else if _, lerr := os.Lstat(cand); lerr == nil {
			s.reject(".venv at "+cand, "is a dangling link")
			s.warn("ignoring %s: it is a link to something that no longer exists", cand)
		}
		parent := filepath.Dir(d)
		if parent == d {
			return nil
		}
		d = parent
	}
}

// dotVenvFile reads a .venv file naming an environment.
func (s *search) dotVenvFile(d, cand string) *envCandidate {
	b, err := readBounded(cand, MaxSmallFileSize)
	if err != nil {
		s.reject(".venv file "+cand, err.Error())
		return nil
	}
	target := strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0])
	if target == "" {
		s.reject(".venv file "+cand, "is empty")
		return nil
	}
	var tries []string
	if filepath.IsAbs(target) {
		tries = []string{target}
	} else {
		tries = []string{filepath.Join(d, target)}
		if !strings.ContainsRune(target, '/') {
			// A bare name: where virtualenvwrapper and pyenv-virtualenv keep named environments.
			workon := s.getenv("WORKON_HOME")
			if workon == "" && s.getenv("HOME") != "" {
				workon = filepath.Join(s.getenv("HOME"), ".virtualenvs")
			}
			pyenvRoot := s.getenv("PYENV_ROOT")
			if pyenvRoot == "" && s.getenv("HOME") != "" {
				pyenvRoot = filepath.Join(s.getenv("HOME"), ".pyenv")
			}
			for _, root := range []string{workon, filepath.Join(pyenvRoot, "versions")} {
				if filepath.IsAbs(root) {
					tries = append(tries, filepath.Join(root, target))
				}
			}
		}
	}
	var whys []string
	for _, t := range tries {
		if st, err := os.Stat(t); err == nil && st.IsDir() {
			if py, why := envPython(t, false); py != "" {
				return &envCandidate{dir: t, py: py, reason: ".venv file " + cand + " -> " + t}
			} else {
				whys = append(whys, t+" "+why)
			}
		} else if isExecutable(t) {
			return &envCandidate{dir: filepath.Dir(t), py: t, reason: ".venv file " + cand + " -> " + t}
		} else {
			whys = append(whys, t+" does not exist")
		}
	}
	why := fmt.Sprintf("names %q, which is no usable environment: %s", target, strings.Join(whys, "; "))
	s.reject(".venv file "+cand, why)
	s.warn("ignoring %s: it %s; write the environment's path into it, or pass --python", cand, why)
	return nil
}

// activeVenv decides about VIRTUAL_ENV. As uv does for a project, an active environment other than the
// project's own .venv is ignored with a warning; one that does not work is passed over with a warning.
func (s *search) activeVenv(v string, dot *envCandidate) *envCandidate {
	name := "VIRTUAL_ENV=" + v
	py, why := envPython(v, true)
	if py == "" {
		s.reject(name, why)
		if !strings.HasPrefix(why, "has no pyvenv.cfg") {
			s.warn("ignoring the active virtual environment %s (%s); %s", v, why, recreateHint(v))
		}
		return nil
	}
	if dot != nil && !samePath(v, dot.dir) {
		s.reject(name, "it is not the project's environment "+dot.dir)
		s.warn("VIRTUAL_ENV=%s does not match the project environment %s and is ignored (as uv ignores it); "+
			"deactivate it, or pass --python %s to use it", v, dot.dir, py)
		return nil
	}
	return &envCandidate{dir: v, py: py, reason: name}
}

// otherVenvs names the environments in the project directory that are not used because only .venv is
// (uv and this kit look for .venv alone), so that a project with venv/ is not run silently elsewhere.
func (s *search) otherVenvs() {
	for _, n := range []string{"venv", "env", ".env"} {
		dir := filepath.Join(s.dir, n)
		if !fileExists(filepath.Join(dir, "pyvenv.cfg")) {
			continue
		}
		hint := "pass --python " + filepath.Join(dir, "bin", "python") + " or rename it to .venv"
		s.reject(n+"/ at "+dir, "only .venv is looked for, as uv does; "+hint)
		s.warn("the virtual environment %s is not used (only .venv is looked for, as uv does); %s", dir, hint)
	}
}

// onPath chooses python3 on PATH, run from the project directory so that a shim resolves the project's
// version, and held to the project's version pin when there is one.
func (s *search) onPath() (*Interpreter, error) {
	pin := s.pin
	p, lookErr := s.lookPath("python3")
	if pin == nil {
		if lookErr != nil {
			return nil, &Error{Message: "no Python interpreter found: no --python, ASTRABOX_PYTHON, active virtualenv, .venv, conda environment or python3 on PATH",
				Err: lookErr, Hint: "install Python 3.9+ or pass --python /path/to/python"}
		}
		return s.probe(p, "python3 on PATH")
	}
	pinned := fmt.Sprintf("%s pinned by %s", pin.Label(), pin.Source)
	if lookErr == nil {
		in, err := s.probe(p, "python3 on PATH")
		switch {
		case err == nil && pin.Accepts(in):
			in.Reason = "python3 on PATH, " + pinned
			return in, nil
		case err == nil:
			s.reject(p, fmt.Sprintf("is %s, not the %s", describe(in), pinned))
		default:
			s.reject(p, firstLine(err.Error()))
		}
	}
	for _, c := range pinnedCandidates(pin, s.getenv, s.lookPath) {
		in, err := s.probe(c, pinned)
		if err == nil && pin.Accepts(in) {
			in.Reason = pinned + ", found at " + c
			return in, nil
		}
		if err != nil {
			s.reject(c, firstLine(err.Error()))
		} else {
			s.reject(c, "is "+describe(in))
		}
	}
	tried := make([]string, len(s.rejected))
	for i, r := range s.rejected {
		tried[i] = r.Candidate + " (" + r.Why + ")"
	}
	return nil, &Error{File: pin.File,
		Message: fmt.Sprintf("%s, and no interpreter of that version was found; tried: %s", pinned, strings.Join(tried, ", ")),
		Hint:    fmt.Sprintf("install it (pyenv install %s, or uv python install %s), pass --python, or change the pin", pin.Request, pin.Request)}
}

// samePath compares two directories after resolving links.
func samePath(a, b string) bool {
	ra, err1 := filepath.EvalSymlinks(a)
	rb, err2 := filepath.EvalSymlinks(b)
	if err1 != nil || err2 != nil {
		return filepath.Clean(a) == filepath.Clean(b)
	}
	return ra == rb
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}
