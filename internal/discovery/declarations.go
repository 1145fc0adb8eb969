package discovery

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// readName sets the project name from [project], [tool.poetry], flit's metadata, setup.py, or setup.cfg
// [metadata], in that order.
func (p *Project) readName(doc map[string]any, cfg *iniFile) {
	project, _ := table(doc, "project")
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
}

// tomlDeclarations collects the provider group from pyproject.toml: PEP 621, Poetry and flit's legacy
// tables.
func (p *Project) tomlDeclarations(doc map[string]any, pyPath string, lines map[string]int) error {
	if project, ok := table(doc, "project"); ok {
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
				return err
			}
		}
	}
	sources := []struct {
		origin Origin
		path   []string
	}{
		{OriginPoetry, []string{"tool", "poetry", "plugins"}},
		{OriginFlit, []string{"tool", "flit", "entrypoints"}}, // flit before version 3 read [project]
	}
	for _, src := range sources {
		if groups, ok := table(doc, src.path...); ok {
			p.nearMisses(pyPath, lines, groups, src.path...)
			if err := p.tomlGroup(pyPath, lines, groups, src.origin, src.path...); err != nil {
				return err
			}
		}
	}
	return nil
}

// cfgDeclarations collects the provider group from setup.cfg, which setuptools ignores when pyproject.toml
// has a [project] table that does not list entry-points as dynamic.
func (p *Project) cfgDeclarations(cfg *iniFile, cfgPath string, doc map[string]any) error {
	p.cfgNearMisses(cfgPath, cfg)
	decls, err := cfgGroup(cfgPath, cfg)
	if err != nil {
		return err
	}
	if _, hasProject := table(doc, "project"); len(decls) > 0 && hasProject && !p.DynamicEntryPoints {
		p.warn(cfgPath, decls[0].Line, "setup.cfg declares the provider group, but pyproject.toml has a [project] table "+
			"without \"entry-points\" in dynamic, so setuptools ignores setup.cfg's entry points; move them to "+
			"[project.entry-points.\""+Group+"\"]")
		return nil
	}
	for i := range decls {
		decls[i].Distribution = p.Name
	}
	p.Declarations = append(p.Declarations, decls...)
	return nil
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
		p.nearMiss(file, lines[pathKey(append(prefix, g)...)], g,
			fmt.Sprintf("entry-point group %q is not the provider group; did you mean %q?", g, Group))
	}
}

// nearMiss records a near-miss group as a warning and as a typed fact.
func (p *Project) nearMiss(file string, line int, group, msg string) {
	p.warn(file, line, msg)
	p.NearMisses = append(p.NearMisses, NearMiss{Group: group, File: file, Line: line, Message: msg})
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
		p.nearMiss(file, o.Line, o.Name, msg)
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
