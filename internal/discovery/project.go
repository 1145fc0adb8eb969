package discovery

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/BurntSushi/toml"
)

// Group is the entry-point group in which the platform looks for its runtime preparation provider.
const Group = "astrabox.providers.runtime_preparation"

// Origin says which kind of source declared an entry point.
type Origin string

// The sources of declarations.
const (
	OriginPEP621    Origin = "pyproject.toml [project.entry-points]"
	OriginPoetry    Origin = "pyproject.toml [tool.poetry.plugins]"
	OriginSetupCfg  Origin = "setup.cfg [options.entry_points]"
	OriginFlit      Origin = "pyproject.toml [tool.flit.entrypoints]"
	OriginInstalled Origin = "installed distribution"
)

// Declaration is one entry point of the provider group, with where it was found.
type Declaration struct {
	// Name is the entry-point name (left of '=').
	Name string
	// Value is the object reference as written.
	Value string
	// Ref is Value parsed. It is zero when an installed distribution carries a malformed value.
	Ref ObjectRef
	// Origin is the kind of source.
	Origin Origin
	// File is the file holding the declaration (pyproject.toml, setup.cfg or an installed
	// entry_points.txt); Line is its 1-based line, 0 when unknown.
	File string
	Line int
	// Distribution is the project name for project declarations, the distribution name for installed ones.
	Distribution string
	// Version, Location, Editable and SourceURL describe an installed distribution: its version, the
	// directory holding its metadata (site-packages), and what its direct_url.json says.
	Version   string
	Location  string
	Editable  bool
	SourceURL string
	// AlsoInstalled is set on a project declaration that the interpreter also sees installed from the same
	// project (an editable or regular install); it holds that installed declaration's Where().
	AlsoInstalled string
}

// Where describes the declaration's source for humans: "pyproject.toml:12" or
// "installed distribution my-dist 1.0 at /site-packages".
func (d Declaration) Where() string {
	if d.Origin == OriginInstalled {
		s := "installed distribution " + d.Distribution
		if d.Version != "" {
			s += " " + d.Version
		}
		if d.Location != "" {
			s += " at " + d.Location
		}
		if d.Editable {
			s += " (editable)"
		}
		return s
	}
	s := d.File
	if d.Line > 0 {
		s += fmt.Sprintf(":%d", d.Line)
	}
	if _, table, ok := strings.Cut(string(d.Origin), " "); ok {
		s += " " + table
	}
	if d.AlsoInstalled != "" {
		s += "; also " + d.AlsoInstalled
	}
	return s
}

// Project is what a static reading of a provider project tells.
type Project struct {
	// Dir is the absolute project root.
	Dir string
	// Name is the project name from [project], [tool.poetry] or setup.cfg [metadata]; "" when unknown.
	Name string
	// Pyproject, SetupCfg and SetupPy are the paths of the files read ("" when absent).
	Pyproject string
	SetupCfg  string
	SetupPy   string
	// SetupPyGroupLine is the line of setup.py that names the provider group, 0 when none does. setup.py
	// is never run: its entry points are known only from the installed project's metadata.
	SetupPyGroupLine int
	// Declarations are the provider-group entry points the project declares, in file order.
	Declarations []Declaration
	// DynamicEntryPoints is true when [project] dynamic lists "entry-points": the build backend computes
	// them, so only installed metadata can tell.
	DynamicEntryPoints bool
	// CodeRoots are the absolute directories to put on sys.path so that the project's packages import,
	// and CodeRootsReason says which configuration chose them.
	CodeRoots       []string
	CodeRootsReason string
	// Settings is the raw [tool.astrabox] table (or the whole astrabox.toml), nil when absent;
	// SettingsFile is where it came from.
	Settings     map[string]any
	SettingsFile string
	// Warnings are things worth telling the user that do not stop discovery.
	Warnings []string
	// NearMisses are the entry-point groups that look like a misspelt provider group (also in Warnings), as
	// typed facts for EP-GROUP.
	NearMisses []NearMiss
}

// NearMiss is an entry-point group that looks like the provider group but is not it, with where it is
// declared.
type NearMiss struct {
	Group   string
	File    string
	Line    int
	Message string
}

// FindProjectRoot returns the nearest directory at or above start that holds a pyproject.toml, a setup.cfg
// or a setup.py (regular files only). start may be a file.
func FindProjectRoot(start string) (string, error) {
	abs, err := filepath.Abs(start)
	if err != nil {
		return "", &Error{File: start, Message: "cannot resolve the project path", Err: err}
	}
	if st, err := os.Stat(abs); err != nil {
		return "", &Error{File: start, Message: "cannot read the project path", Err: err,
			Hint: "pass an existing directory with --project"}
	} else if !st.IsDir() {
		abs = filepath.Dir(abs)
	}
	for d := abs; ; {
		for _, name := range []string{"pyproject.toml", "setup.cfg", "setup.py"} {
			if st, err := os.Stat(filepath.Join(d, name)); err == nil && st.Mode().IsRegular() {
				return d, nil
			} else if err == nil {
				// A FIFO or a device in a project file's place: say so rather than walk on to a parent.
				return "", notRegular(filepath.Join(d, name), st.Mode())
			}
		}
		parent := filepath.Dir(d)
		if parent == d {
			break
		}
		d = parent
	}
	return "", &Error{File: abs, Message: "no pyproject.toml, setup.cfg or setup.py here or in any parent directory",
		Hint: "run astrabox inside your provider project, or point at it with --project DIR"}
}

// LoadProject reads the project in dir statically: pyproject.toml (PEP 621 and Poetry tables), setup.cfg,
// and astrabox.toml. It neither builds nor imports anything.
func LoadProject(dir string) (*Project, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, &Error{File: dir, Message: "cannot resolve the project path", Err: err}
	}
	p := &Project{Dir: abs}
	pySrc, pyPath, err := readOptional(filepath.Join(abs, "pyproject.toml"))
	if err != nil {
		return nil, err
	}
	cfgSrc, cfgPath, err := readOptional(filepath.Join(abs, "setup.cfg"))
	if err != nil {
		return nil, err
	}
	p.Pyproject, p.SetupCfg = pyPath, cfgPath
	p.scanSetupPy()
	if pyPath == "" && cfgPath == "" && p.SetupPy == "" {
		return nil, &Error{File: abs, Message: "none of pyproject.toml, setup.cfg and setup.py found",
			Hint: "point --project at the directory that holds your provider's pyproject.toml"}
	}

	var doc map[string]any
	var lines map[string]int
	if pyPath != "" {
		if doc, err = decodeTOML(pyPath, pySrc); err != nil {
			return nil, err
		}
		lines = keyLines(pySrc)
	}
	var cfg *iniFile
	if cfgPath != "" {
		if cfg, err = parseINI(cfgPath, cfgSrc); err != nil {
			return nil, err
		}
	}

	p.readName(doc, cfg)
	if err := p.tomlDeclarations(doc, pyPath, lines); err != nil {
		return nil, err
	}
	if cfg != nil {
		if err := p.cfgDeclarations(cfg, cfgPath, doc); err != nil {
			return nil, err
		}
	}
	p.Declarations = dedupeSame(p.Declarations)

	p.CodeRoots, p.CodeRootsReason = codeRoots(abs, doc, cfg)

	if err := p.loadSettings(doc, pyPath, lines); err != nil {
		return nil, err
	}
	return p, nil
}

// loadSettings reads [tool.astrabox] and astrabox.toml.
func (p *Project) loadSettings(doc map[string]any, pyPath string, lines map[string]int) error {
	tool, _ := table(doc, "tool")
	raw, inPy := tool["astrabox"]
	altSrc, altPath, err := readOptional(filepath.Join(p.Dir, "astrabox.toml"))
	if err != nil {
		return err
	}
	// As ruff does with ruff.toml and [tool.ruff]: astrabox.toml takes precedence, and a [tool.astrabox]
	// table that holds settings is ignored with a warning (an empty one, as `astrabox init` may leave, is not
	// worth one).
	if inPy && altPath != "" {
		if m, ok := raw.(map[string]any); !ok || len(m) > 0 {
			p.warn(pyPath, lines[pathKey("tool", "astrabox")], "[tool.astrabox] is ignored: astrabox.toml beside it takes precedence (keep the settings in one place)")
		}
		inPy = false
	}
	if inPy {
		m, ok := raw.(map[string]any)
		if !ok {
			return &Error{File: pyPath, Line: lines[pathKey("tool", "astrabox")],
				Message: "[tool.astrabox] must be a table", Hint: "write the settings under a [tool.astrabox] header"}
		}
		p.Settings, p.SettingsFile = m, pyPath
	}
	if altPath != "" {
		m, err := decodeTOML(altPath, altSrc)
		if err != nil {
			return err
		}
		p.Settings, p.SettingsFile = m, altPath
	}
	return nil
}

// decodeTOML parses a TOML file into a generic map, turning syntax errors into an *Error with position.
func decodeTOML(path, src string) (map[string]any, error) {
	if err := checkTOMLShape(path, src); err != nil {
		return nil, err
	}
	var m map[string]any
	if _, err := toml.Decode(src, &m); err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return nil, &Error{File: path, Line: pe.Position.Line, Column: pe.Position.Col,
				Message: TOMLSyntaxMessage(src, pe), Err: err, hideCause: true,
				Hint: "fix the syntax at that position (TOML needs quoted strings, balanced brackets and each key " +
					"defined once)"}
		}
		return nil, &Error{File: path, Message: "invalid TOML", Err: err, hideCause: true, Hint: "fix the file so it is valid TOML"}
	}
	return m, nil
}

// readOptional reads a project text file (bounded by MaxProjectFileSize, regular files only, UTF-8),
// returning "" and no error when it does not exist.
func readOptional(path string) (string, string, error) {
	b, err := readBounded(path, MaxProjectFileSize)
	if errors.Is(err, fs.ErrNotExist) {
		return "", "", nil
	}
	if err != nil {
		return "", "", err
	}
	if err := checkText(path, b); err != nil {
		return "", "", err
	}
	return string(b), path, nil
}

// table walks nested tables; ok is false when any step is missing or not a table.
func table(m map[string]any, keys ...string) (map[string]any, bool) {
	cur := m
	for _, k := range keys {
		next, ok := cur[k].(map[string]any)
		if !ok {
			return nil, false
		}
		cur = next
	}
	return cur, cur != nil
}

func str(m map[string]any, k string) string {
	s, _ := m[k].(string)
	return s
}

func firstString(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

var bareKey = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// quoteKeys renders key parts as TOML, quoting those that are not bare.
func quoteKeys(parts []string) []string {
	out := make([]string, len(parts))
	for i, k := range parts {
		if bareKey.MatchString(k) {
			out[i] = k
		} else {
			out[i] = fmt.Sprintf("%q", k)
		}
	}
	return out
}
