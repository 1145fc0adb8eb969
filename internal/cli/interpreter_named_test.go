package cli

import (
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMissingLibraryNamesTheInterpreterInEveryFormat: a provider that imports hvac, run by the interpreter a
// pyenv shim picks because PYENV_VERSION came from the environment, does not load. The text, JSON, JUnit and
// SARIF outputs each name the interpreter, the inherited PYENV_VERSION that chose it, and the python setting
// that pins another (before, only the text and JUnit said anything, and none said how to pin).
func TestMissingLibraryNamesTheInterpreterInEveryFormat(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python")
	}
	if _, err := os.Stat("/root/.pyenv/shims/python3"); err != nil {
		t.Skip("no pyenv shim")
	}
	// The kit looks python3 up on the process's PATH: the shim first again, as a user's shell has it (TestMain
	// put the interpreter behind it first).
	t.Setenv("PATH", "/root/.pyenv/shims"+string(os.PathListSeparator)+os.Getenv("PATH"))
	dir := t.TempDir()
	write := func(p, body string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("pyproject.toml", "[project]\nname = \"vault-keys\"\nversion = \"1.0.0\"\ndependencies = [\"hvac\"]\n\n"+
		"[project.entry-points.\"astrabox.providers.runtime_preparation\"]\nvault = \"vault_keys.provider:VaultProvider\"\n")
	write("vault_keys/__init__.py", "")
	write("vault_keys/provider.py", "import hvac\n\nfrom astrabox.seams import RuntimePreparationProvider\n\n\n"+
		"class VaultProvider(RuntimePreparationProvider):\n    name = \"vault-keys\"\n")
	getenv := func(k string) string {
		switch k {
		case "PATH":
			return "/root/.pyenv/shims:" + os.Getenv("PATH")
		case "PYENV_VERSION":
			return "3.11.7"
		}
		return ""
	}
	out := t.TempDir()
	js, junit, sarif := filepath.Join(out, "r.json"), filepath.Join(out, "r.xml"), filepath.Join(out, "r.sarif")
	code, stdout, stderr := runGetenv(t, getenv, "conformance", "run", "--project", dir, "--json", js, "--junit", junit, "--sarif", sarif)
	if code != ExitUndecided {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	read := func(p string) string {
		t.Helper()
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		return string(b)
	}
	wants := []string{"PYENV_VERSION=3.11.7", "python = \\\"/path/to/python\\\""}
	check := func(format, text string, quoted bool) {
		t.Helper()
		for _, w := range wants {
			if !quoted {
				w = strings.ReplaceAll(w, `\"`, `"`)
			}
			if !strings.Contains(text, w) {
				t.Errorf("%s lacks %q:\n%s", format, w, text)
			}
		}
		if !strings.Contains(text, "/root/.pyenv/versions/3.11.7/bin/python3") {
			t.Errorf("%s does not name the interpreter:\n%s", format, text)
		}
	}
	check("text", stderr, false)
	check("json", read(js), true)
	check("sarif", read(sarif), true)
	x := read(junit)
	if err := xml.Unmarshal([]byte(x), new(struct{})); err != nil {
		t.Fatalf("junit: %v", err)
	}
	check("junit", strings.ReplaceAll(x, "&#34;", `"`), false)
	var doc struct {
		Schema      string `json:"schema"`
		Interpreter struct {
			Path, Version, Inherited string
			ChosenBy                 string `json:"chosen_by"`
			PinWith                  string `json:"pin_with"`
		} `json:"interpreter"`
	}
	if err := json.Unmarshal([]byte(read(js)), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Schema != "astrabox.undecided/v1" || doc.Interpreter.Inherited != "PYENV_VERSION=3.11.7" ||
		doc.Interpreter.Version != "3.11.7" || !strings.Contains(doc.Interpreter.ChosenBy, "PYENV_VERSION") {
		t.Errorf("json document = %+v", doc)
	}
}
