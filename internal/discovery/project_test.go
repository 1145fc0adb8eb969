package discovery

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

type wantDecl struct {
	name, module, attr string
	extras             []string
	origin             Origin
	file               string // base name
	line               int
}

func TestLoadProjectVariants(t *testing.T) {
	cases := []struct {
		dir          string
		name         string
		decls        []wantDecl
		dynamic      bool
		roots        []string // relative to the project
		rootsReason  string
		settingsFile string // base name, "" for none
		warnings     []string
	}{
		{dir: "pep621_groups", name: "Acme_Prep",
			decls: []wantDecl{{"enterprise", "acme_prep.provider", "PreparationProvider", nil, OriginPEP621, "pyproject.toml", 20}},
			roots: []string{"src"}, rootsReason: "src layout", settingsFile: "pyproject.toml"},
		{dir: "pep621_inline", name: "acme",
			decls: []wantDecl{{"enterprise", "acme.prep", "Provider.Inner", []string{"fast", "cloud"}, OriginPEP621, "pyproject.toml", 10}},
			roots: []string{"."}, rootsReason: "flat layout"},
		{dir: "pep621_literal", name: "lit",
			decls: []wantDecl{{"my.provider", "lit_pkg.provider", "Provider", nil, OriginPEP621, "pyproject.toml", 6}},
			roots: []string{"lib"}, rootsReason: "[tool.setuptools] package-dir"},
		{dir: "packages_find", name: "finder",
			decls: []wantDecl{{"finder", "finder_pkg", "Provider", nil, OriginPEP621, "pyproject.toml", 3}},
			roots: []string{"python"}, rootsReason: "[tool.setuptools.packages.find] where"},
		{dir: "poetry_from", name: "poetic-prep",
			decls: []wantDecl{{"poetic", "poetic.provider", "Provider", nil, OriginPoetry, "pyproject.toml", 12}},
			roots: []string{"src"}, rootsReason: "[tool.poetry] packages"},
		{dir: "setupcfg_only", name: "cfg-prep",
			decls: []wantDecl{{"Enterprise", "cfg_prep.provider", "Provider", []string{"extra"}, OriginSetupCfg, "setup.cfg", 20}},
			roots: []string{"src"}, rootsReason: "setup.cfg [options] package_dir, setup.cfg [options.packages.find] where"},
		{dir: "setupcfg_pyproject", name: "mini",
			decls: []wantDecl{{"mini", "mini_pkg.provider", "Provider", nil, OriginSetupCfg, "setup.cfg", 5}},
			roots: []string{"."}, rootsReason: "flat layout"},
		{dir: "dynamic", name: "dyn", dynamic: true, roots: []string{"."}, rootsReason: "flat layout"},
		{dir: "none", name: "my-deployment", roots: []string{"."}, rootsReason: "flat layout"},
		{dir: "two", name: "twice",
			decls: []wantDecl{
				{"first", "twice.a", "First", nil, OriginPEP621, "pyproject.toml", 5},
				{"second", "twice.b", "Second", nil, OriginPEP621, "pyproject.toml", 6},
			},
			roots: []string{"."}, rootsReason: "flat layout"},
		{dir: "astrabox_toml", name: "alt", roots: []string{"."}, rootsReason: "flat layout", settingsFile: "astrabox.toml"},
		{dir: "setupcfg_ignored", name: "ignored", roots: []string{"."}, rootsReason: "flat layout",
			warnings: []string{"setup.cfg:3: setup.cfg declares the provider group, but pyproject.toml has a [project] table"}},
		{dir: "nearmiss", name: "near", roots: []string{"."}, rootsReason: "flat layout",
			warnings: []string{`pyproject.toml:4: entry-point group "astrabox.providers.runtime-preparation" is not the provider group`}},
		{dir: "both_tables", name: "both-tables",
			decls: []wantDecl{{"p", "bt.provider", "Provider", nil, OriginPEP621, "pyproject.toml", 5}},
			roots: []string{"."}, rootsReason: "flat layout"},
	}
	for _, c := range cases {
		t.Run(c.dir, func(t *testing.T) {
			dir := filepath.Join("testdata", "projects", c.dir)
			p, err := LoadProject(dir)
			if err != nil {
				t.Fatalf("LoadProject: %v", err)
			}
			abs, _ := filepath.Abs(dir)
			if p.Dir != abs {
				t.Errorf("Dir = %q, want %q", p.Dir, abs)
			}
			if p.Name != c.name {
				t.Errorf("Name = %q, want %q", p.Name, c.name)
			}
			if p.DynamicEntryPoints != c.dynamic {
				t.Errorf("DynamicEntryPoints = %v, want %v", p.DynamicEntryPoints, c.dynamic)
			}
			if len(p.Declarations) != len(c.decls) {
				t.Fatalf("got %d declarations %+v, want %d", len(p.Declarations), p.Declarations, len(c.decls))
			}
			for i, w := range c.decls {
				d := p.Declarations[i]
				if d.Name != w.name || d.Ref.Module != w.module || d.Ref.Attr != w.attr || !reflect.DeepEqual(d.Ref.Extras, w.extras) ||
					d.Origin != w.origin || filepath.Base(d.File) != w.file || d.Line != w.line || d.Distribution != c.name {
					t.Errorf("declaration %d = %+v, want %+v", i, d, w)
				}
				if !filepath.IsAbs(d.File) {
					t.Errorf("declaration file %q is not absolute", d.File)
				}
			}
			var roots []string
			for _, r := range p.CodeRoots {
				rel, _ := filepath.Rel(abs, r)
				roots = append(roots, rel)
			}
			if !reflect.DeepEqual(roots, c.roots) || p.CodeRootsReason != c.rootsReason {
				t.Errorf("code roots = %v (%s), want %v (%s)", roots, p.CodeRootsReason, c.roots, c.rootsReason)
			}
			if filepath.Base(p.SettingsFile) != c.settingsFile && !(c.settingsFile == "" && p.SettingsFile == "") {
				t.Errorf("SettingsFile = %q, want %q", p.SettingsFile, c.settingsFile)
			}
			if (c.settingsFile == "") != (p.Settings == nil) {
				t.Errorf("Settings = %v with SettingsFile %q", p.Settings, c.settingsFile)
			}
			if len(p.Warnings) != len(c.warnings) {
				t.Fatalf("warnings = %q, want %q", p.Warnings, c.warnings)
			}
			for i, w := range c.warnings {
				if !strings.Contains(p.Warnings[i], w) {
					t.Errorf("warning %d = %q, want it to contain %q", i, p.Warnings[i], w)
				}
			}
		})
	}
}

func TestLoadProjectSettingsValues(t *testing.T) {
	p, err := LoadProject(filepath.Join("testdata", "projects", "pep621_groups"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"suite": "strict", "seed": int64(42), "double": map[string]any{"faults": []any{"timeout"}}}
	if !reflect.DeepEqual(p.Settings, want) {
		t.Errorf("Settings = %#v, want %#v", p.Settings, want)
	}
	q, err := LoadProject(filepath.Join("testdata", "projects", "astrabox_toml"))
	if err != nil {
		t.Fatal(err)
	}
	if q.Settings["suite"] != "quick" {
		t.Errorf("astrabox.toml settings = %#v", q.Settings)
	}
}

func TestLoadProjectErrors(t *testing.T) {
	cases := []struct {
		dir        string
		file       string
		line, col  int
		contains   []string
		hintSubstr string
	}{
		{dir: "malformed_toml", file: "pyproject.toml", line: 5, col: 39,
			contains: []string{"pyproject.toml:5:39: invalid TOML: strings cannot contain newlines\n"}, hintSubstr: "fix the syntax"},
		{dir: "malformed_ref", file: "pyproject.toml", line: 6,
			contains: []string{"pyproject.toml:6: malformed entry point bad", `"badref..provider"`, "stray dot"}, hintSubstr: "package.module:ClassName"},
		{dir: "module_only", file: "pyproject.toml", line: 5,
			contains: []string{"names a module, not the provider class"}, hintSubstr: `"modonly.provider:YourProvider"`},
		{dir: "malformed_cfg", file: "setup.cfg", line: 6,
			contains: []string{"setup.cfg:6: entry point line \"just-a-reference:Provider\" has no '='"}, hintSubstr: "name = package.module:ClassName"},
	}
	for _, c := range cases {
		t.Run(c.dir, func(t *testing.T) {
			_, err := LoadProject(filepath.Join("testdata", "projects", c.dir))
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error = %v (%T), want *Error", err, err)
			}
			if filepath.Base(e.File) != c.file || e.Line != c.line || e.Column != c.col {
				t.Errorf("position = %s:%d:%d, want %s:%d:%d", e.File, e.Line, e.Column, c.file, c.line, c.col)
			}
			msg := err.Error()
			for _, s := range c.contains {
				if !strings.Contains(msg, s) {
					t.Errorf("error %q does not contain %q", msg, s)
				}
			}
			if !strings.Contains(e.Hint, c.hintSubstr) || !strings.Contains(msg, "\n  hint: ") {
				t.Errorf("hint %q should contain %q and be on its own line", e.Hint, c.hintSubstr)
			}
		})
	}
}

func TestMalformedTOMLWrapsParseError(t *testing.T) {
	_, err := LoadProject(filepath.Join("testdata", "projects", "malformed_toml"))
	var e *Error
	if !errors.As(err, &e) || e.Err == nil || errors.Unwrap(err) != e.Err {
		t.Fatalf("error %v does not wrap the TOML parse error", err)
	}
}

func TestFindProjectRoot(t *testing.T) {
	root, _ := filepath.Abs(filepath.Join("testdata", "projects", "pep621_groups"))
	for _, start := range []string{
		root,
		filepath.Join(root, "src", "acme_prep"),
		filepath.Join(root, "src", "acme_prep", "provider.py"),
	} {
		got, err := FindProjectRoot(start)
		if err != nil || got != root {
			t.Errorf("FindProjectRoot(%q) = %q, %v; want %q", start, got, err, root)
		}
	}
	cfgRoot, _ := filepath.Abs(filepath.Join("testdata", "projects", "setupcfg_only"))
	if got, err := FindProjectRoot(filepath.Join(cfgRoot, "src")); err != nil || got != cfgRoot {
		t.Errorf("setup.cfg root = %q, %v; want %q", got, err, cfgRoot)
	}
	empty := t.TempDir()
	if _, err := FindProjectRoot(empty); err == nil || !strings.Contains(err.Error(), "no pyproject.toml, setup.cfg or setup.py") {
		t.Errorf("FindProjectRoot(empty) error = %v", err)
	}
	if _, err := FindProjectRoot(filepath.Join(empty, "missing")); err == nil {
		t.Error("FindProjectRoot(missing) succeeded")
	}
}

func TestLoadProjectWithoutFiles(t *testing.T) {
	_, err := LoadProject(t.TempDir())
	var e *Error
	if !errors.As(err, &e) || !strings.Contains(err.Error(), "none of pyproject.toml, setup.cfg and setup.py found") {
		t.Fatalf("error = %v", err)
	}
}

func TestFindModule(t *testing.T) {
	p, err := LoadProject(filepath.Join("testdata", "projects", "pep621_groups"))
	if err != nil {
		t.Fatal(err)
	}
	file, root, ok := p.FindModule("acme_prep.provider")
	if !ok || filepath.Base(file) != "provider.py" || filepath.Base(root) != "src" {
		t.Errorf("FindModule = %q, %q, %v", file, root, ok)
	}
	if _, _, ok := p.FindModule("acme_prep.missing"); ok {
		t.Error("FindModule found a missing module")
	}
}

func TestNonStringEntryPoint(t *testing.T) {
	dir := t.TempDir()
	src := "[project]\nname = \"x\"\n\n[project.entry-points.\"astrabox.providers.runtime_preparation\"]\nbad = 3\n"
	if err := os.WriteFile(filepath.Join(dir, "pyproject.toml"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := LoadProject(dir)
	var e *Error
	if !errors.As(err, &e) || e.Line != 5 || !strings.Contains(e.Message, "must be a string") {
		t.Fatalf("error = %v", err)
	}
}

// TestSettingsFileTakesPrecedence: with both astrabox.toml and a [tool.astrabox] table, astrabox.toml wins
// (ruff's rule for ruff.toml and [tool.ruff]) and the ignored table is warned about at its line.
func TestSettingsFileTakesPrecedence(t *testing.T) {
	p, err := LoadProject(filepath.Join("testdata", "projects", "settings_both"))
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(p.SettingsFile) != "astrabox.toml" || p.Settings["suite"] != "strict" {
		t.Errorf("settings from %s: %v", p.SettingsFile, p.Settings)
	}
	if len(p.Warnings) != 1 || !strings.Contains(p.Warnings[0], "pyproject.toml:4: [tool.astrabox] is ignored: astrabox.toml") {
		t.Errorf("warnings %q", p.Warnings)
	}
	dir := t.TempDir()
	for name, body := range map[string]string{"pyproject.toml": "[project]\nname = \"x\"\n\n[tool.astrabox]\n", "astrabox.toml": "seed = 3\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if p, err := LoadProject(dir); err != nil || len(p.Warnings) != 0 || filepath.Base(p.SettingsFile) != "astrabox.toml" {
		t.Errorf("empty [tool.astrabox] beside astrabox.toml: %v, %+v", err, p)
	}
}
