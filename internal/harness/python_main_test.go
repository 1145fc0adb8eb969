package harness

import (
	"os"
	"testing"

	"github.com/astrabox-dev/astrabox/internal/testutil"
)

// TestMain runs the package's tests with the interpreter behind pyenv's shim first on PATH, so that each
// `python3` they (or the kit on their behalf) start by name costs an interpreter, not the shim's bash and
// pyenv's scripts (testutil.PreferRealPython; tests about shims lay out their own PATH).
func TestMain(m *testing.M) {
	testutil.PreferRealPython()
	os.Exit(m.Run())
}
