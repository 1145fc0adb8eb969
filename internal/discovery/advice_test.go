package discovery

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestLoadAdvice: a failed import names the interpreter, the sys.path used and the code roots, and says
// what to do, depending on whether the provider's module is in the project.
func TestLoadAdvice(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "pyproject.toml"), "[project]\nname = \"adv\"\n[project.entry-points.\"astrabox.providers.runtime_preparation\"]\n"+
		"here = \"adv_pkg.provider:P\"\n")
	write(t, filepath.Join(dir, "src", "adv_pkg", "__init__.py"), "")
	write(t, filepath.Join(dir, "src", "adv_pkg", "provider.py"), "import requests\n")
	p, err := LoadProject(dir)
	if err != nil {
		t.Fatal(err)
	}
	py := &Interpreter{Path: "/opt/py/bin/python3", Version: [3]int{3, 11, 7}, Reason: ".venv at x"}
	src := filepath.Join(dir, "src")
	base := LoadContext{Project: p, Python: py, Chosen: p.Declarations[0], Paths: []string{src, filepath.Join(dir, "extra")}, ErrorType: PyModuleNotFoundError}

	text := strings.Join(LoadAdvice(base), "\n")
	for _, want := range []string{
		"interpreter: /opt/py/bin/python3 (Python 3.11.7, chosen by .venv at x)",
		"sys.path: " + src + ", " + filepath.Join(dir, "extra") + ", then the interpreter's standard library and site-packages",
		"code roots found: " + src + " (src layout)",
		"the provider's module adv_pkg.provider is in the project (" + filepath.Join(src, "adv_pkg", "provider.py") + ")",
		"/opt/py/bin/python3 -m pip install -e " + dir,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("advice lacks %q:\n%s", want, text)
		}
	}

	// A module the code roots do not hold: python-path or the install command.
	missing := base
	missing.Chosen.Ref = ObjectRef{Module: "elsewhere.provider", Attr: "P"}
	text = strings.Join(LoadAdvice(missing), "\n")
	if !strings.Contains(text, "elsewhere.provider is in none of the code roots") || !strings.Contains(text, "python-path") ||
		!strings.Contains(text, "-m pip install -e "+dir) {
		t.Errorf("missing module advice:\n%s", text)
	}

	// Another exception type: where it ran, without import advice.
	other := base
	other.ErrorType = "ValueError"
	text = strings.Join(LoadAdvice(other), "\n")
	if !strings.Contains(text, "interpreter: ") || strings.Contains(text, "pip install") {
		t.Errorf("ValueError advice:\n%s", text)
	}
}
