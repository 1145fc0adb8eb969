package discovery

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestShimResolvesToTheRealInterpreter checks that a launcher script (as pyenv installs) is replaced by the
// interpreter behind it, so that replicas do not pay a shell start each.
func TestShimResolvesToTheRealInterpreter(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python")
	}
	real, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3 on PATH")
	}
	dir := t.TempDir()
	shim := filepath.Join(dir, "python3")
	if err := os.WriteFile(shim, []byte("#!/bin/sh\nexec "+real+" \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	in, err := FindInterpreter(InterpreterOptions{Flag: shim, Getenv: func(string) string { return "" }, ProjectDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if in.Via != shim || in.Path == shim || isShim(in.Path) {
		t.Fatalf("path %q via %q: the shim was not resolved", in.Path, in.Via)
	}
	// A real binary is kept as found.
	again, err := FindInterpreter(InterpreterOptions{Flag: in.Path, Getenv: func(string) string { return "" }, ProjectDir: dir})
	if err != nil || again.Path != in.Path || again.Via != "" {
		t.Fatalf("a binary was rewritten: %+v %v", again, err)
	}
}
