package discovery

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// VersionPin is a Python version the project pins for pyenv, asdf, mise or uv: the first version of the
// nearest .python-version (pyenv, uv, mise) or of the python line of the nearest .tool-versions (asdf, mise),
// searching from the project directory up through its parents as those tools do. PYENV_VERSION, when set,
// overrides both, as it does for pyenv.
type VersionPin struct {
	// Request is the version as written: "3.9.18", "3.9", "system", or an environment name.
	Request string
	// File is the file that pins it ("" for PYENV_VERSION); Source names the file or variable.
	File   string
	Source string
	// Release is the numeric prefix of Request (3, 9, 18), with Parts telling how many were given; Parts is
	// 0 when Request is not a version number (system, an environment name).
	Release [3]int
	Parts   int
	// Implementation is the Python implementation the pin names, as platform.python_implementation()
	// says it ("PyPy" for "pypy3.10"), "" when it names none (CPython or any).
	Implementation string
}

// Accepts reports whether an interpreter satisfies the pin: its version matches, and its implementation
// is the one the pin names, if any (a pypy3.10 pin is never satisfied by CPython 3.10).
func (p *VersionPin) Accepts(in *Interpreter) bool {
	return (p.Implementation == "" || in.Implementation == p.Implementation) && p.Matches(in.Version)
}

// describe names an interpreter's implementation and version for messages: "Python 3.10.14", "PyPy 3.10.14".
func describe(in *Interpreter) string {
	if in.Implementation != "" && in.Implementation != "CPython" {
		return in.Implementation + " " + in.VersionString()
	}
	return "Python " + in.VersionString()
}

// Matches reports whether a Python version satisfies the pin: every part given must be equal. A pin that is
// not a version number (system, a named environment) matches any version.
func (p *VersionPin) Matches(v [3]int) bool {
	for i := 0; i < p.Parts; i++ {
		if v[i] != p.Release[i] {
			return false
		}
	}
	return true
}

// Label names the pinned version for messages: "Python 3.9", or the request quoted when it is not a
// version number ("pypy3.10", an environment name).
func (p *VersionPin) Label() string {
	if p.Implementation != "" {
		return fmt.Sprintf("%s %q", p.Implementation, p.Request)
	}
	if p.Parts > 0 {
		return "Python " + p.Request
	}
	return fmt.Sprintf("%q", p.Request)
}

var pinVersion = regexp.MustCompile(`^(?:c?python-?)?(\d+)(?:\.(\d+))?(?:\.(\d+))?$`)

// pinImplementation is a pin naming another implementation, as pyenv, uv and mise write it: "pypy3.10",
// "pypy3.10-7.3.17", "graalpy-24.1" is not a Python version and is left alone.
var pinImplementation = regexp.MustCompile(`^(pypy|graalpy)(\d+)(?:\.(\d+))?(?:-[0-9a-z.]+)?$`)

// implementations maps a pin's implementation prefix to what platform.python_implementation() says.
var implementations = map[string]string{"pypy": "PyPy", "graalpy": "GraalVM"}

// newPin parses a requested version.
func newPin(request, file, source string) *VersionPin {
	p := &VersionPin{Request: request, File: file, Source: source}
	if m := pinImplementation.FindStringSubmatch(strings.ToLower(request)); m != nil {
		p.Implementation = implementations[m[1]]
		for i := 2; i <= 3 && m[i] != ""; i++ {
			p.Release[i-2], _ = strconv.Atoi(m[i])
			p.Parts = i - 1
		}
		return p
	}
	if m := pinVersion.FindStringSubmatch(strings.ToLower(request)); m != nil {
		for i := 1; i <= 3 && m[i] != ""; i++ {
			p.Release[i-1], _ = strconv.Atoi(m[i])
			p.Parts = i
		}
	}
	return p
}

// FindVersionPin returns the project's version pin, nil when there is none. getenv reads PYENV_VERSION.
func FindVersionPin(projectDir string, getenv func(string) string) (*VersionPin, error) {
	if v := strings.TrimSpace(getenv("PYENV_VERSION")); v != "" {
		return newPin(strings.Fields(strings.ReplaceAll(v, ":", " "))[0], "", "PYENV_VERSION="+v), nil
	}
	abs, err := filepath.Abs(projectDir)
	if err != nil {
		return nil, nil
	}
	for d := abs; ; {
		for _, name := range []string{".python-version", ".tool-versions"} {
			file := filepath.Join(d, name)
			b, err := readBounded(file, MaxSmallFileSize)
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			if err != nil {
				return nil, err
			}
			if req := pinRequest(name, string(b)); req != "" {
				return newPin(req, file, file), nil
			}
		}
		parent := filepath.Dir(d)
		if parent == d {
			return nil, nil
		}
		d = parent
	}
}

// pinRequest reads the first version of a .python-version file (one version a line, # comments) or of the
// python line of a .tool-versions file ("python 3.11.7 3.9.18").
func pinRequest(name, text string) string {
	for _, line := range strings.Split(text, "\n") {
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		f := strings.Fields(line)
		switch {
		case len(f) == 0:
		case name == ".python-version":
			return f[0]
		case f[0] == "python" && len(f) > 1:
			return f[1]
		}
	}
	return ""
}

// pinnedCandidates lists the interpreters that may satisfy a pin, best first: pythonX.Y on PATH, then the
// installs of pyenv ($PYENV_ROOT/versions), asdf ($ASDF_DATA_DIR/installs/python) and mise
// ($MISE_DATA_DIR/installs/python), newest matching version first.
func pinnedCandidates(p *VersionPin, getenv func(string) string, lookPath func(string) (string, error)) []string {
	var out []string
	add := func(c string) {
		for _, o := range out {
			if o == c {
				return
			}
		}
		out = append(out, c)
	}
	command := "python"
	for prefix, impl := range implementations {
		if impl == p.Implementation {
			command = prefix
		}
	}
	if p.Parts >= 2 {
		if c, err := lookPath(fmt.Sprintf("%s%d.%d", command, p.Release[0], p.Release[1])); err == nil {
			add(c)
		}
	}
	if p.Implementation != "" {
		if c, err := lookPath(fmt.Sprintf("%s%d", command, p.Release[0])); err == nil {
			add(c)
		}
	}
	home := getenv("HOME")
	dirOr := func(env, def string) string {
		if v := getenv(env); v != "" {
			return v
		}
		if home == "" {
			return ""
		}
		return filepath.Join(home, def)
	}
	roots := []string{
		filepath.Join(dirOr("PYENV_ROOT", ".pyenv"), "versions"),
		filepath.Join(dirOr("ASDF_DATA_DIR", ".asdf"), "installs", "python"),
		filepath.Join(dirOr("MISE_DATA_DIR", filepath.Join(".local", "share", "mise")), "installs", "python"),
	}
	for _, root := range roots {
		if root == "" || !filepath.IsAbs(root) {
			continue
		}
		for _, dir := range matchingInstalls(root, p) {
			if py := venvPython(dir); py != "" {
				add(py)
			}
		}
	}
	return out
}

// matchingInstalls lists root's version directories that a pin may name, newest first.
func matchingInstalls(root string, p *VersionPin) []string {
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil
	}
	type inst struct {
		dir string
		v   *VersionPin
	}
	var found []inst
	for _, e := range entries {
		name := e.Name()
		v := newPin(name, "", "")
		switch {
		case p.Parts == 0 && name == p.Request: // a named environment (pyenv-virtualenv)
		case p.Implementation != "" && v.Implementation == p.Implementation && p.Matches(v.Release):
		case p.Implementation == "" && v.Implementation == "" && p.Parts > 0 && v.Parts == 3 && p.Matches(v.Release):
		default:
			continue
		}
		found = append(found, inst{filepath.Join(root, name), v})
	}
	sort.SliceStable(found, func(i, j int) bool { return versionLess(found[j].v.Release, found[i].v.Release) })
	out := make([]string, len(found))
	for i, f := range found {
		out[i] = f.dir
	}
	return out
}
