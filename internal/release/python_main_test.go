package release

import (
	"testing"

	"github.com/astrabox-dev/astrabox/internal/testutil"
)

// TestMain: this package's tests start python3 by name, so they run with the interpreter behind pyenv's shim
// first on PATH (testutil.MainWithRealPython).
func TestMain(m *testing.M) { testutil.MainWithRealPython(m) }
