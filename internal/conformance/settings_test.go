package conformance

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
)

// parseSettingsFile decodes a pyproject.toml fixture's [tool.astrabox] table the way discovery does and
// parses it.
func parseSettingsFile(t *testing.T, path string) (*Settings, error) {
	t.Helper()
	var doc struct {
		Tool struct {
			Astrabox map[string]any `toml:"astrabox"`
		} `toml:"tool"`
	}
	if _, err := toml.DecodeFile(path, &doc); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return ParseSettings(doc.Tool.Astrabox, path, filepath.Dir(path))
}

// TestBadSettingsSayWhereAndWhat runs every settings fixture under testdata/settings: each must be refused
// with its file, the line of the bad key, and the words its `# want:` comment gives.
func TestBadSettingsSayWhereAndWhat(t *testing.T) {
	files, _ := filepath.Glob("testdata/settings/*.toml")
	if len(files) < 8 {
		t.Fatalf("only %d settings fixtures", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, _ := os.ReadFile(f)
			var want []string
			line := 0
			for i, l := range strings.Split(string(data), "\n") {
				if w, ok := strings.CutPrefix(l, "# want: "); ok {
					want = append(want, w)
				}
				if strings.Contains(l, "# here") {
					line = i + 1
				}
			}
			_, err := parseSettingsFile(t, f)
			var se *SettingsError
			if !errors.As(err, &se) {
				t.Fatalf("accepted, or not a settings error: %v", err)
			}
			if se.Line != line || !strings.HasPrefix(err.Error(), f+":"+strconv.Itoa(line)+": ") {
				t.Errorf("line %d, want %d: %v", se.Line, line, err)
			}
			for _, w := range want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("message lacks %q: %v", w, err)
				}
			}
		})
	}
}
