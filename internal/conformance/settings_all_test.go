package conformance

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestSettingsReportEveryErrorWithItsLine: a pyproject.toml with four mistakes (a misspelled key, a bad
// value, a misspelled deadline, a bad service key) gives one error per mistake, in line order, each with
// file:line; the misspelled keys get "did you mean" the right one.
func TestSettingsReportEveryErrorWithItsLine(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "pyproject.toml")
	src := `[project]
name = "x"

[tool.astrabox]
relicas = 3
seed = "one"
deadlines = { turn = 2, sesion = 5 }

[tool.astrabox.services.vault]
urls = ["https://vault.corp.example"]
run = "fake --port 1"
`
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := parseSettingsFile(t, path)
	if err == nil {
		t.Fatal("accepted")
	}
	want := []struct {
		line int
		key  string
		text string
	}{
		{5, "relicas", `unknown setting; did you mean "replicas"?`},
		{6, "seed", "must be a whole number"},
		{7, "deadlines.sesion", `unknown deadline; did you mean "session"?`},
		{11, "services.vault.run", "must contain {port}"},
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != len(want) {
		t.Fatalf("%d errors, want %d:\n%v", len(lines), len(want), err)
	}
	for i, w := range want {
		prefix := path + ":" + itoa(w.line) + ": [tool.astrabox] " + w.key + ": "
		if !strings.HasPrefix(lines[i], prefix) || !strings.Contains(lines[i], w.text) {
			t.Errorf("error %d = %q, want prefix %q and %q", i, lines[i], prefix, w.text)
		}
	}
	if !strings.Contains(lines[3], "docs/services.md") {
		t.Errorf("service error does not point at docs/services.md: %s", lines[3])
	}
	var se *SettingsError
	if !errors.As(err, &se) || se.Line != 5 {
		t.Errorf("first SettingsError %+v, want line 5", se)
	}
}

func TestSuggestKeys(t *testing.T) {
	valid := topLevelKeys()
	cases := map[string]string{"relicas": "replicas", "python_path": "python-path", "dedlines": "deadlines", "skp": "skip", "egres": "egress"}
	for in, want := range cases {
		if got := suggestKeys(in, valid); len(got) == 0 || got[0] != want {
			t.Errorf("suggestKeys(%q) = %v, want %q first", in, got, want)
		}
	}
	if got := suggestKeys("zzzzzzzz", valid); len(got) != 0 {
		t.Errorf("suggestKeys of nonsense = %v", got)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
