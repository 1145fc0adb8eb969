package testutil

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/astrabox-dev/astrabox/internal/discovery"
)

// pathAsFound is PATH as the test binary found it, kept by PreferRealPython when it changes PATH.
var pathAsFound struct {
	sync.Mutex
	path string
	set  bool
}

// realPython is the interpreter behind `python3` on PATH, resolved once per test binary.
var realPython struct {
	once sync.Once
	path string
	err  error
}

// RealPython returns the interpreter that `python3` on PATH runs, resolved once per test binary by the kit's
// own discovery: behind a pyenv shim, the version's interpreter (read off pyenv's files, without running the
// shim); elsewhere the python3 found on PATH itself. Tests that pass the bare name only for convenience use
// it so that each start costs an interpreter, not a shim's bash and pyenv's scripts (about 250 ms of CPU).
func RealPython() (string, error) {
	realPython.once.Do(func() {
		found, err := exec.LookPath("python3")
		if err != nil {
			realPython.err = fmt.Errorf("python3 on PATH: %w", err)
			return
		}
		in, err := discovery.FindInterpreter(discovery.InterpreterOptions{Flag: found})
		if err != nil {
			realPython.err = fmt.Errorf("the interpreter behind %s: %w", found, err)
			return
		}
		realPython.path = in.Path
	})
	return realPython.path, realPython.err
}

// Python returns RealPython's interpreter, failing tb when there is none.
func Python(tb testing.TB) string {
	tb.Helper()
	py, err := RealPython()
	if err != nil {
		tb.Fatal(err)
	}
	return py
}

// MainWithRealPython is the TestMain of a package whose tests start python3 by name: PreferRealPython, then
// the package's tests, then exit with their code. A package that needs more around its tests calls
// PreferRealPython in its own TestMain instead.
func MainWithRealPython(m *testing.M) {
	PreferRealPython()
	os.Exit(m.Run())
}

// PreferRealPython puts the directory of RealPython's interpreter first on this process's PATH when
// `python3` on PATH is a launcher (a pyenv shim), so that every `python3` a test starts by name, and every
// one the kit starts from PATH on its behalf (declared services' fake commands, the harness's default
// interpreter, `--python python3`), is the interpreter itself. It is for a package's TestMain, before m.Run;
// it leaves PATH alone when python3 is already the interpreter or cannot be resolved (the tests then meet
// the same python3 as before). Tests whose point is a shim or the PATH lookup lay out their own PATH. A test
// that runs a project pinned to pyenv's "system" version must run with PathAsFound: pyenv's system
// interpreter is the first python3 on PATH after the shims, which would otherwise be this one
// (internal/conformance's real-client fixtures pin "system", Debian's interpreter with their libraries).
func PreferRealPython() {
	py, err := RealPython()
	if err != nil {
		return
	}
	found, err := exec.LookPath("python3")
	if err != nil || found == py {
		return
	}
	dir := filepath.Dir(py)
	if filepath.Base(py) != "python3" {
		return
	}
	path := os.Getenv("PATH")
	pathAsFound.Lock()
	if !pathAsFound.set {
		pathAsFound.path, pathAsFound.set = path, true
	}
	pathAsFound.Unlock()
	if path == dir || strings.HasPrefix(path, dir+string(os.PathListSeparator)) {
		return
	}
	_ = os.Setenv("PATH", dir+string(os.PathListSeparator)+path)
}

// PathAsFound returns PATH as the test binary found it, before PreferRealPython put the interpreter's
// directory first (the current PATH when it did not), for a test that must meet pyenv's shim as a user
// would, such as one whose project pins pyenv's "system" version.
func PathAsFound() string {
	pathAsFound.Lock()
	defer pathAsFound.Unlock()
	if pathAsFound.set {
		return pathAsFound.path
	}
	return os.Getenv("PATH")
}
