package discovery

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
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

	project, hasProject := table(doc, "project")
	poetry, _ := table(doc, "tool", "poetry")
	flit, _ := table(doc, "tool", "flit", "metadata")
	p.Name = firstString(str(project, "name"), str(poetry, "name"), str(flit, "dist-name"), str(flit, "module"), p.Name)
	if p.Name == "" && cfg != nil {
		if s := cfg.section("metadata"); s != nil {
			if o := s.option("name"); o != nil {
				p.Name = strings.TrimSpace(strings.Join(o.Lines, " "))
			}
		}
	}

	if dyn, ok := project["dynamic"].([]any); ok {
		for _, v := range dyn {
			if v == "entry-points" {
				p.DynamicEntryPoints = true
			}
		}
	}

	// PEP 621.
	if hasProject {
		if _, ok := project["entry_points"]; ok {
			p.warn(pyPath, lines[pathKey("project", "entry_points")],
				"[project] has \"entry_points\"; PEP 621 spells it \"entry-points\" (with a dash), so it is ignored")
		}
		if eps, ok := table(project, "entry-points"); ok {
			if p.DynamicEntryPoints {
				p.warn(pyPath, lines[pathKey("project", "entry-points")],
					"entry-points is both listed in [project] dynamic and given statically; build backends reject that")
			}
			p.nearMisses(pyPath, lines, eps, "project", "entry-points")
			if err := p.tomlGroup(pyPath, lines, eps, OriginPEP621, "project", "entry-points"); err != nil {
				return nil, err
			}
		}
	}
	// Poetry.
	if plugins, ok := table(poetry, "plugins"); ok {
		p.nearMisses(pyPath, lines, plugins, "tool", "poetry", "plugins")
		if err := p.tomlGroup(pyPath, lines, plugins, OriginPoetry, "tool", "poetry", "plugins"); err != nil {
			return nil, err
		}
	}
	// flit's legacy metadata (before flit 3 read [project]).
	if eps, ok := table(doc, "tool", "flit", "entrypoints"); ok {
		p.nearMisses(pyPath, lines, eps, "tool", "flit", "entrypoints")
		if err := p.tomlGroup(pyPath, lines, eps, OriginFlit, "tool", "flit", "entrypoints"); err != nil {
			return nil, err
		}
	}
	// setup.cfg.
	if cfg != nil {
		p.cfgNearMisses(cfgPath, cfg)
		decls, err := cfgGroup(cfgPath, cfg)
		if err != nil {
			return nil, err
		}
		if len(decls) > 0 && hasProject && !p.DynamicEntryPoints {
			p.warn(cfgPath, decls[0].Line, "setup.cfg declares the provider group, but pyproject.toml has a [project] table "+
				"without \"entry-points\" in dynamic, so setuptools ignores setup.cfg's entry points; move them to "+
				"[project.entry-points.\""+Group+"\"]")
		} else {
			for i := range decls {
				decls[i].Distribution = p.Name
			}
			p.Declarations = append(p.Declarations, decls...)
		}
	}
	p.Declarations = dedupeSame(p.Declarations)

	p.CodeRoots, p.CodeRootsReason = codeRoots(abs, doc, cfg)

	if err := p.loadSettings(doc, pyPath, lines); err != nil {
		return nil, err
	}
	return p, nil
}

var setupPyName = regexp.MustCompile(`\bname\s*=\s*["']([A-Za-z0-9][A-Za-z0-9._-]*)["']`)

// scanSetupPy notes a setup.py without running it: the distribution name it passes to setup() when written
// literally, and the line naming the provider group.
func (p *Project) scanSetupPy() {
	path := filepath.Join(p.Dir, "setup.py")
	b, err := readBounded(path, MaxProjectFileSize)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			p.Warnings = append(p.Warnings, err.Error())
		}
		return
	}
	p.SetupPy = path
	src := string(b)
	if m := setupPyName.FindStringSubmatch(src); m != nil {
		p.Name = m[1]
	}
	if i := strings.Index(src, Group); i >= 0 {
		p.SetupPyGroupLine = 1 + strings.Count(src[:i], "\n")
	}
}

// warn records a warning tied to a file and line.
func (p *Project) warn(file string, line int, msg string) {
	loc := file
	if line > 0 {
		loc += fmt.Sprintf(":%d", line)
	}
	p.Warnings = append(p.Warnings, loc+": "+msg)
}

var nearGroup = regexp.MustCompile(`(?i)astrabox|runtime[_.-]?preparation`)

// nearMisses warns about entry-point groups that look like a misspelt provider group.
func (p *Project) nearMisses(file string, lines map[string]int, groups map[string]any, prefix ...string) {
	names := make([]string, 0, len(groups))
	for g := range groups {
		if g != Group && nearGroup.MatchString(g) {
			names = append(names, g)
		}
	}
	sort.Strings(names)
	for _, g := range names {
		p.warn(file, lines[pathKey(append(prefix, g)...)],
			fmt.Sprintf("entry-point group %q is not the provider group; did you mean %q?", g, Group))
	}
}

// cfgNearMisses warns about setup.cfg entry-point groups that look like the provider group but are not it,
// in another case above all: setuptools writes the group into entry_points.txt as spelt, and the platform's
// lookup compares it exactly (measured with setuptools 58 and 65).
func (p *Project) cfgNearMisses(file string, cfg *iniFile) {
	sec := cfg.section("options.entry_points")
	if sec == nil {
		return
	}
	for _, o := range sec.Options {
		if o.Name == Group || !nearGroup.MatchString(o.Name) {
			continue
		}
		msg := fmt.Sprintf("entry-point group %q is not the provider group; did you mean %q?", o.Name, Group)
		if strings.EqualFold(o.Name, Group) {
			msg += " (setuptools keeps the group's case as written and the platform compares it exactly: write it in lower case)"
		}
		p.warn(file, o.Line, msg)
	}
}

// tomlGroup collects the provider group from a table of groups (PEP 621 or Poetry).
func (p *Project) tomlGroup(file string, lines map[string]int, groups map[string]any, origin Origin, prefix ...string) error {
	raw, ok := groups[Group]
	if !ok {
		return nil
	}
	gpath := append(append([]string{}, prefix...), Group)
	grp, ok := raw.(map[string]any)
	if !ok {
		return &Error{File: file, Line: lines[pathKey(gpath...)],
			Message: fmt.Sprintf("the entry-point group %q must be a table of name = \"module:Class\" entries", Group),
			Hint:    "write [" + strings.Join(quoteKeys(gpath), ".") + "] followed by lines like enterprise = \"my_pkg.provider:Provider\""}
	}
	names := make([]string, 0, len(grp))
	for n := range grp {
		names = append(names, n)
	}
	// File order, by line.
	sort.SliceStable(names, func(i, j int) bool {
		li, lj := lines[pathKey(append(gpath, names[i])...)], lines[pathKey(append(gpath, names[j])...)]
		if li != lj {
			return li < lj
		}
		return names[i] < names[j]
	})
	for _, n := range names {
		line := lines[pathKey(append(gpath, n)...)]
		if line == 0 {
			line = lines[pathKey(gpath...)]
		}
		v, ok := grp[n].(string)
		if !ok {
			return &Error{File: file, Line: line,
				Message: fmt.Sprintf("entry point %q must be a string \"module:Class\", not %T", n, grp[n]),
				Hint:    fmt.Sprintf("write %s = \"my_pkg.provider:Provider\"", n)}
		}
		d, err := newDeclaration(file, line, n, v, origin)
		if err != nil {
			return err
		}
		d.Distribution = p.Name
		p.Declarations = append(p.Declarations, d)
	}
	return nil
}

// newDeclaration validates a project declaration.
func newDeclaration(file string, line int, name, value string, origin Origin) (Declaration, error) {
	name = strings.TrimSpace(name)
	if name == "" || strings.HasPrefix(name, "[") || strings.Contains(name, "=") {
		return Declaration{}, &Error{File: file, Line: line,
			Message: fmt.Sprintf("invalid entry-point name %q", name),
			Hint:    "use a name of letters, digits, '_', '.' and '-', such as enterprise"}
	}
	ref, err := ParseObjectRef(value)
	if err != nil {
		return Declaration{}, &Error{File: file, Line: line,
			Message: fmt.Sprintf("malformed entry point %s", name), Err: err,
			Hint: "the value must look like \"package.module:ClassName\" (optionally followed by [extra1, extra2])"}
	}
	if ref.Attr == "" {
		return Declaration{}, &Error{File: file, Line: line,
			Message: fmt.Sprintf("entry point %s = %q names a module, not the provider class (EP-GROUP)", name, value),
			Hint:    fmt.Sprintf("append the class: \"%s:YourProvider\"", ref.Module)}
	}
	return Declaration{Name: name, Value: strings.TrimSpace(value), Ref: ref, Origin: origin, File: file, Line: line}, nil
}

// cfgGroup reads the provider group from setup.cfg [options.entry_points].
func cfgGroup(file string, cfg *iniFile) ([]Declaration, error) {
	sec := cfg.section("options.entry_points")
	if sec == nil {
		return nil, nil
	}
	opt := sec.option(Group)
	if opt == nil {
		return nil, nil
	}
	items, lines := opt.listItems()
	var out []Declaration
	for i, it := range items {
		name, value, ok := strings.Cut(it, "=")
		if !ok {
			return nil, &Error{File: file, Line: lines[i],
				Message: fmt.Sprintf("entry point line %q has no '='", it),
				Hint:    "write one 'name = package.module:ClassName' per indented line under " + Group + " ="}
		}
		d, err := newDeclaration(file, lines[i], name, value, OriginSetupCfg)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

// dedupeSame drops repeated declarations of the same name and reference (e.g. PEP 621 and Poetry tables
// saying the same thing), keeping the first.
func dedupeSame(ds []Declaration) []Declaration {
	var out []Declaration
next:
	for _, d := range ds {
		for _, o := range out {
			if o.Name == d.Name && o.Ref.Equal(d.Ref) {
				continue next
			}
		}
		out = append(out, d)
	}
	return out
}

// loadSettings reads [tool.astrabox] and astrabox.toml.
func (p *Project) loadSettings(doc map[string]any, pyPath string, lines map[string]int) error {
	tool, _ := table(doc, "tool")
	raw, inPy := tool["astrabox"]
	altSrc, altPath, err := readOptional(filepath.Join(p.Dir, "astrabox.toml"))
	if err != nil {
		return err
	}
	if inPy && altPath != "" {
		return &Error{File: altPath,
			Message: "settings are defined twice: in astrabox.toml and in " + pyPath + " [tool.astrabox]" +
				fmt.Sprintf(" (line %d)", lines[pathKey("tool", "astrabox")]),
			Hint: "keep one of them: move the settings into one file and delete the other"}
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

// codeRoots decides where the project's importable packages live.
func codeRoots(dir string, doc map[string]any, cfg *iniFile) ([]string, string) {
	var roots []string
	var reasons []string
	add := func(reason string, rel string) {
		r := filepath.Clean(filepath.Join(dir, filepath.FromSlash(rel)))
		if !slices.Contains(roots, r) {
			roots = append(roots, r)
		}
		if !slices.Contains(reasons, reason) {
			reasons = append(reasons, reason)
		}
	}
	packageDir := func(reason, pkg, path string) {
		pkg, path = strings.TrimSpace(pkg), strings.TrimSpace(path)
		if pkg == "" {
			add(reason, path)
		} else if !strings.Contains(pkg, ".") && filepath.Base(filepath.Clean(path)) == pkg {
			add(reason, filepath.Dir(filepath.Clean(path)))
		}
	}
	st, _ := table(doc, "tool", "setuptools")
	if pd, ok := table(st, "package-dir"); ok {
		keys := sortedKeys(pd)
		for _, k := range keys {
			if v, ok := pd[k].(string); ok {
				packageDir("[tool.setuptools] package-dir", k, v)
			}
		}
	}
	if find, ok := table(st, "packages", "find"); ok {
		if where, ok := find["where"].([]any); ok {
			for _, w := range where {
				if s, ok := w.(string); ok {
					add("[tool.setuptools.packages.find] where", s)
				}
			}
		}
	}
	if wheel, ok := table(doc, "tool", "hatch", "build", "targets", "wheel"); ok {
		if pkgs, ok := wheel["packages"].([]any); ok {
			for _, it := range pkgs {
				if s, ok := it.(string); ok && strings.TrimSpace(s) != "" {
					// "src/my_pkg" ships my_pkg, importable from src.
					add("[tool.hatch.build.targets.wheel] packages", filepath.Dir(filepath.Clean(filepath.FromSlash(s))))
				}
			}
		}
	}
	poetry, _ := table(doc, "tool", "poetry")
	if pkgs, ok := poetry["packages"].([]any); ok {
		for _, it := range pkgs {
			if m, ok := it.(map[string]any); ok {
				from, _ := m["from"].(string)
				if from == "" {
					from = "."
				}
				add("[tool.poetry] packages", from)
			}
		}
	}
	if cfg != nil {
		if s := cfg.section("options"); s != nil {
			if o := s.option("package_dir"); o != nil {
				items, _ := o.listItems()
				for _, it := range items {
					k, v, _ := strings.Cut(it, "=")
					packageDir("setup.cfg [options] package_dir", k, v)
				}
			}
		}
		if s := cfg.section("options.packages.find"); s != nil {
			if o := s.option("where"); o != nil {
				items, _ := o.listItems()
				for _, it := range items {
					add("setup.cfg [options.packages.find] where", it)
				}
			}
		}
	}
	if len(roots) > 0 {
		return roots, strings.Join(reasons, ", ")
	}
	if hasPython(filepath.Join(dir, "src")) {
		return []string{filepath.Join(dir, "src")}, "src layout"
	}
	return []string{dir}, "flat layout"
}

// hasPython reports whether dir holds Python code: a module, a package directory, or a PEP 420 namespace
// package (a directory without __init__.py with Python code below it, up to a few levels down).
func hasPython(dir string) bool { return hasPythonWithin(dir, 0) }

const namespaceDepth = 4

func hasPythonWithin(dir string, depth int) bool {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".py") {
			return true
		}
	}
	if depth >= namespaceDepth {
		return false
	}
	for _, e := range entries {
		n := e.Name()
		if !e.IsDir() || strings.HasPrefix(n, ".") || n == "__pycache__" || strings.HasSuffix(n, ".egg-info") || strings.HasSuffix(n, ".dist-info") {
			continue
		}
		if hasPythonWithin(filepath.Join(dir, n), depth+1) {
			return true
		}
	}
	return false
}

// FindModule looks for a dotted module in the project's code roots and returns its file (a .py file or
// a package's __init__.py, or the directory of a namespace package) and the root it was found in.
func (p *Project) FindModule(module string) (file, root string, ok bool) {
	rel := filepath.Join(strings.Split(module, ".")...)
	for _, r := range p.CodeRoots {
		base := filepath.Join(r, rel)
		for _, c := range []string{base + ".py", filepath.Join(base, "__init__.py")} {
			if st, err := os.Stat(c); err == nil && st.Mode().IsRegular() {
				return c, r, true
			}
		}
		if st, err := os.Stat(base); err == nil && st.IsDir() {
			return base, r, true
		}
	}
	return "", "", false
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
				Message: "invalid TOML: " + pe.Message, Err: err, hideCause: true,
				Hint: "fix the syntax at that position (TOML needs quoted strings, balanced brackets and each key " +
					"defined once)"}
		}
		return nil, &Error{File: path, Message: "invalid TOML", Err: err, Hint: "fix the file so it is valid TOML"}
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

func sortedKeys(m map[string]any) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
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
