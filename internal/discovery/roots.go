package discovery

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// rootSet collects code roots and the configuration that named them.
type rootSet struct {
	dir     string
	roots   []string
	reasons []string
}

func (r *rootSet) add(reason string, rel string) {
	root := filepath.Clean(filepath.Join(r.dir, filepath.FromSlash(rel)))
	if !slices.Contains(r.roots, root) {
		r.roots = append(r.roots, root)
	}
	if !slices.Contains(r.reasons, reason) {
		r.reasons = append(r.reasons, reason)
	}
}

// packageDir reads one package-dir mapping: "" = "src" makes src a root, and my_pkg = "lib/my_pkg" makes lib one.
func (r *rootSet) packageDir(reason, pkg, path string) {
	pkg, path = strings.TrimSpace(pkg), strings.TrimSpace(path)
	if pkg == "" {
		r.add(reason, path)
	} else if !strings.Contains(pkg, ".") && filepath.Base(filepath.Clean(path)) == pkg {
		r.add(reason, filepath.Dir(filepath.Clean(path)))
	}
}

// codeRoots decides where the project's importable packages live.
func codeRoots(dir string, doc map[string]any, cfg *iniFile) ([]string, string) {
	r := &rootSet{dir: dir}
	r.tomlRoots(doc)
	if cfg != nil {
		r.cfgRoots(cfg)
	}
	if len(r.roots) > 0 {
		return r.roots, strings.Join(r.reasons, ", ")
	}
	if hasPython(filepath.Join(dir, "src")) {
		return []string{filepath.Join(dir, "src")}, "src layout"
	}
	return []string{dir}, "flat layout"
}

// tomlRoots reads the code roots pyproject.toml names: setuptools, hatch and Poetry tables.
func (r *rootSet) tomlRoots(doc map[string]any) {
	st, _ := table(doc, "tool", "setuptools")
	if pd, ok := table(st, "package-dir"); ok {
		keys := slices.Sorted(maps.Keys(pd))
		for _, k := range keys {
			if v, ok := pd[k].(string); ok {
				r.packageDir("[tool.setuptools] package-dir", k, v)
			}
		}
	}
	if find, ok := table(st, "packages", "find"); ok {
		if where, ok := find["where"].([]any); ok {
			for _, w := range where {
				if s, ok := w.(string); ok {
					r.add("[tool.setuptools.packages.find] where", s)
				}
			}
		}
	}
	if wheel, ok := table(doc, "tool", "hatch", "build", "targets", "wheel"); ok {
		if pkgs, ok := wheel["packages"].([]any); ok {
			for _, it := range pkgs {
				if s, ok := it.(string); ok && strings.TrimSpace(s) != "" {
					// "src/my_pkg" ships my_pkg, importable from src.
					r.add("[tool.hatch.build.targets.wheel] packages", filepath.Dir(filepath.Clean(filepath.FromSlash(s))))
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
				r.add("[tool.poetry] packages", from)
			}
		}
	}
}

// cfgRoots reads the code roots setup.cfg names.
func (r *rootSet) cfgRoots(cfg *iniFile) {
	if s := cfg.section("options"); s != nil {
		if o := s.option("package_dir"); o != nil {
			items, _ := o.listItems()
			for _, it := range items {
				k, v, _ := strings.Cut(it, "=")
				r.packageDir("setup.cfg [options] package_dir", k, v)
			}
		}
	}
	if s := cfg.section("options.packages.find"); s != nil {
		if o := s.option("where"); o != nil {
			items, _ := o.listItems()
			for _, it := range items {
				r.add("setup.cfg [options.packages.find] where", it)
			}
		}
	}
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
