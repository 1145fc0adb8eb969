package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/astrabox-dev/astrabox/internal/term"
)

// TestLastFailedDecidesBeforeAnySuite: `conformance run --last-failed` reads the failure store first, never
// after the default suite: with nothing recorded it says so plainly, and a missing or hostile record is an
// undecided run, each before an interpreter is even looked for (the --python given here does not exist).
func TestLastFailedDecidesBeforeAnySuite(t *testing.T) {
	cases := []struct {
		name   string
		record string // "" leaves no record
		code   int
		want   string
	}{
		{"no record", "", ExitUndecided, "no previous failures recorded in"},
		{"an empty record", `{"written":"2024-01-01T00:00:00Z","failures":[]}`, ExitOK, "the last exploration recorded no failing check: nothing to re-run"},
		{"a record naming a foreign file", `{"failures":[{"check":"GEN-SETTLES","file":"/etc/shadow"}]}`, ExitUndecided, "is not a scenario file of the failure store"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "pyproject.toml"), []byte("[project]\nname = \"p\"\nversion = \"0.1\"\n"), 0o644)
			if tc.record != "" {
				fd := filepath.Join(dir, ".astrabox", "failures")
				os.MkdirAll(fd, 0o755)
				os.WriteFile(filepath.Join(fd, "last-failed.json"), []byte(tc.record), 0o644)
			}
			io, out, errOut := term.Test()
			f := &Factory{IO: io, Getenv: func(string) string { return "" }, Version: "test"}
			code := Run(f, []string{"conformance", "run", dir, "--last-failed", "--python", "/nonexistent/python3"})
			if code != tc.code || !strings.Contains(errOut.String(), tc.want) || strings.Contains(errOut.String(), "interpreter") {
				t.Errorf("exit %d (want %d)\nstdout:\n%s\nstderr:\n%s\nwant %q", code, tc.code, out, errOut, tc.want)
			}
		})
	}
}
