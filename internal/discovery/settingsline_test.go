package discovery

import (
	"path/filepath"
	"testing"
)

// TestSettingsLine: the line of a settings key is found wherever TOML lets it be written (key = value, a
// dotted key, a table header, inside an inline table), under [tool.astrabox] in pyproject.toml and at the top
// of astrabox.toml; a missing key falls back to its innermost written part; text inside strings and comments,
// and the same key outside the settings table, never count.
func TestSettingsLine(t *testing.T) {
	dir := t.TempDir()
	pyproject := filepath.Join(dir, "pyproject.toml")
	write(t, pyproject, `[project]
name = "p"
python = "not the settings' python"

[tool.astrabox]
# python = "a comment"
notes = """
python = "inside a string"
"""
python = "3.11"
deadlines.turn = 5
limits = { open-files = 64, memory = { soft = "1G" } }

[tool.astrabox.services.api]
url = "http://127.0.0.1:1"
[tool.astrabox."quoted"]
k = 1
`)
	standalone := filepath.Join(dir, "astrabox.toml")
	write(t, standalone, `python = "3.12"
[deadlines]
turn = 3
`)
	for _, c := range []struct {
		file, key string
		line      int
	}{
		{pyproject, "python", 10},
		{pyproject, "deadlines.turn", 11},
		{pyproject, "deadlines", 11},
		{pyproject, "deadlines.session", 11}, // not written: its table's line
		{pyproject, "limits.open-files", 12},
		{pyproject, "limits.memory.soft", 12},
		{pyproject, "services", 14},
		{pyproject, "services.api.url", 15},
		{pyproject, "services.api.ready", 14},
		{pyproject, "quoted.k", 17},
		{pyproject, "name", 0}, // [project]'s, not a setting
		{pyproject, "nope", 0},
		{pyproject, "", 0},
		{standalone, "python", 1},
		{standalone, "deadlines.turn", 3},
		{standalone, "deadlines.nope", 2},
		{filepath.Join(dir, "missing.toml"), "python", 0},
		{dir, "python", 0},
		{"", "python", 0},
	} {
		if got := SettingsLine(c.file, c.key); got != c.line {
			t.Errorf("%s %q: line %d, want %d", filepath.Base(c.file), c.key, got, c.line)
		}
	}
}
