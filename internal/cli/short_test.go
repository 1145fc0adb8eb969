package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// skipIfStartsPython skips the test under -short when its command line would load a provider (and so start
// Python): it names a project or an interpreter (--project, --python), a project directory (one holding a
// pyproject.toml or setup.py), or a scenario file to run. Lines that fail in flag parsing or need no provider
// (list, explain, help, report merge) still run under -short.
func skipIfStartsPython(t *testing.T, args []string) {
	t.Helper()
	if !testing.Short() {
		return
	}
	for _, a := range args {
		if a == "--project" || a == "--python" || strings.HasPrefix(a, "--project=") || strings.HasPrefix(a, "--python=") {
			t.Skip("starts Python (skipped under -short)")
		}
		if strings.HasPrefix(a, "-") {
			continue
		}
		if isProjectDir(a) || strings.HasSuffix(a, ".yaml") || strings.HasSuffix(a, ".yml") {
			t.Skip("starts Python (skipped under -short)")
		}
	}
}

func isProjectDir(p string) bool {
	for _, marker := range []string{"pyproject.toml", "setup.py", "setup.cfg"} {
		if _, err := os.Stat(filepath.Join(p, marker)); err == nil {
			return true
		}
	}
	return false
}
