package discovery

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestCodeRootsMissedBefore covers layouts the code-root rules used to miss.
func TestCodeRootsMissedBefore(t *testing.T) {
	t.Run("hatch wheel packages", func(t *testing.T) {
		dir := t.TempDir()
		write(t, filepath.Join(dir, "pyproject.toml"), "[project]\nname = \"h\"\n\n[tool.hatch.build.targets.wheel]\npackages = [\"lib/acme\", \"lib/other\"]\n")
		write(t, filepath.Join(dir, "lib", "acme", "__init__.py"), "")
		p, err := LoadProject(dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.CodeRoots) != 1 || p.CodeRoots[0] != filepath.Join(dir, "lib") || p.CodeRootsReason != "[tool.hatch.build.targets.wheel] packages" {
			t.Fatalf("roots %q (%s)", p.CodeRoots, p.CodeRootsReason)
		}
	})
	t.Run("PEP 420 namespace package under src", func(t *testing.T) {
		dir := t.TempDir()
		write(t, filepath.Join(dir, "pyproject.toml"), "[project]\nname = \"ns\"\n")
		write(t, filepath.Join(dir, "src", "acme", "providers", "prep.py"), "class P: pass\n")
		p, err := LoadProject(dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.CodeRoots) != 1 || p.CodeRoots[0] != filepath.Join(dir, "src") || p.CodeRootsReason != "src layout" {
			t.Fatalf("roots %q (%s)", p.CodeRoots, p.CodeRootsReason)
		}
		if file, root, ok := p.FindModule("acme.providers.prep"); !ok || root != filepath.Join(dir, "src") || !strings.HasSuffix(file, "prep.py") {
			t.Fatalf("FindModule: %s %s %v", file, root, ok)
		}
		// An src/ holding only metadata is not a code root.
		dir2 := t.TempDir()
		write(t, filepath.Join(dir2, "pyproject.toml"), "[project]\nname = \"ns\"\n")
		write(t, filepath.Join(dir2, "src", "ns.egg-info", "x.py"), "")
		if p, err := LoadProject(dir2); err != nil || p.CodeRootsReason != "flat layout" {
			t.Fatalf("egg-info only: %v %+v", err, p)
		}
	})
	t.Run("flit legacy entrypoints", func(t *testing.T) {
		dir := t.TempDir()
		write(t, filepath.Join(dir, "pyproject.toml"), "[tool.flit.metadata]\nmodule = \"flit_prov\"\n\n"+
			"[tool.flit.entrypoints.\"astrabox.providers.runtime_preparation\"]\nlegacy = \"flit_prov.provider:Provider\"\n")
		p, err := LoadProject(dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Declarations) != 1 {
			t.Fatalf("declarations %+v", p.Declarations)
		}
		d := p.Declarations[0]
		if d.Name != "legacy" || d.Origin != OriginFlit || d.Line != 5 || d.Distribution != "flit_prov" || d.Ref.Target() != "flit_prov.provider:Provider" {
			t.Fatalf("declaration %+v", d)
		}
		if w := d.Where(); !strings.HasSuffix(w, "pyproject.toml:5 [tool.flit.entrypoints]") {
			t.Fatalf("where %q", w)
		}
	})
	t.Run("setup.cfg group in another case", func(t *testing.T) {
		dir := t.TempDir()
		write(t, filepath.Join(dir, "setup.cfg"), "[metadata]\nname = cs\n\n[options.entry_points]\n"+
			"Astrabox.Providers.Runtime_Preparation =\n    mixed = cs_pkg.provider:Provider\n")
		p, err := LoadProject(dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Declarations) != 0 || len(p.Warnings) != 1 || !strings.Contains(p.Warnings[0], "setup.cfg:5: entry-point group \"Astrabox.Providers.Runtime_Preparation\" is not the provider group") ||
			!strings.Contains(p.Warnings[0], "write it in lower case") {
			t.Fatalf("declarations %+v warnings %q", p.Declarations, p.Warnings)
		}
	})
}
