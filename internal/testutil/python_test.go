package testutil

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestRealPythonIsTheInterpreter checks that RealPython names an interpreter whose sys.executable is itself
// (not a launcher), and that after PreferRealPython `python3` on PATH is that interpreter.
func TestRealPythonIsTheInterpreter(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3 on PATH")
	}
	py := Python(t)
	out, err := exec.Command(py, "-c", "import sys; print(sys.executable)").Output()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(out)); got != py {
		t.Errorf("sys.executable of %s is %s, want itself", py, got)
	}
	t.Setenv("PATH", os.Getenv("PATH"))
	PreferRealPython()
	if found, err := exec.LookPath("python3"); err != nil || found != py {
		t.Errorf("python3 on PATH after PreferRealPython is %q (%v), want %s", found, err, py)
	}
}

// TestPathAsFoundKeepsTheShim checks that, after PreferRealPython, PathAsFound is the PATH from before, on
// which python3 is what it was (the shim where there is one).
func TestPathAsFoundKeepsTheShim(t *testing.T) {
	before, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3 on PATH")
	}
	t.Setenv("PATH", os.Getenv("PATH"))
	PreferRealPython()
	t.Setenv("PATH", PathAsFound())
	if got, err := exec.LookPath("python3"); err != nil || got != before {
		t.Errorf("python3 on PathAsFound is %q (%v), want %s", got, err, before)
	}
}
