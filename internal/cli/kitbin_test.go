package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/astrabox-dev/astrabox/internal/testutil"
)

// kit is the kit's binary built for this package's tests that run it as a user would (the bash completion,
// Ctrl-C), built once per test binary: one link of the whole kit instead of one per test.
var kit struct {
	sync.Mutex
	dir, path string
}

// kitBinary returns the path of the kit's binary, building it on first use; TestMain removes it.
func kitBinary(t *testing.T) string {
	t.Helper()
	kit.Lock()
	defer kit.Unlock()
	if kit.path != "" {
		return kit.path
	}
	if kit.dir == "" {
		dir, err := os.MkdirTemp("", "astrabox-cli-test-")
		if err != nil {
			t.Fatal(err)
		}
		kit.dir = dir
	}
	bin := filepath.Join(kit.dir, "astrabox")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/astrabox").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	kit.path = bin
	return bin
}

// TestMain runs the package's tests with the interpreter behind pyenv's shim first on PATH (so that each
// `python3` they, the kit's binary or the kit in process start by name is the interpreter, not the shim's
// bash and pyenv's scripts: testutil.PreferRealPython), and removes the kit's binary at the end.
func TestMain(m *testing.M) {
	testutil.PreferRealPython()
	code := m.Run()
	if kit.dir != "" {
		_ = os.RemoveAll(kit.dir)
	}
	os.Exit(code)
}
