package discovery

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestUnusableTempDirSaysWhichAndWhat sets TMPDIR to a missing directory and to a file: the error names the
// path and TMPDIR, says why, and says what to do; it never blames the interpreter.
func TestUnusableTempDirSaysWhichAndWhat(t *testing.T) {
	base := t.TempDir()
	file := filepath.Join(base, "a-file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct{ dir, why string }{
		{filepath.Join(base, "missing"), "it does not exist"},
		{file, "it is not a directory"},
	}
	for _, c := range cases {
		t.Setenv("TMPDIR", c.dir)
		for name, run := range map[string]func() error{
			"scratch": func() error { _, err := scratchDir("x-"); return err },
			"probe":   func() error { _, err := probeIn("/no/such/python", "a test", ""); return err },
		} {
			err := run()
			var de *Error
			if !errors.As(err, &de) {
				t.Fatalf("%s in %s: %T %v, want a discovery error", name, c.dir, err, err)
			}
			msg := err.Error()
			for _, want := range []string{c.dir + ": ", "$TMPDIR", c.why, "hint: point TMPDIR at an existing, writable directory"} {
				if !strings.Contains(msg, want) {
					t.Errorf("%s in %s: %q lacks %q", name, c.dir, msg, want)
				}
			}
			if strings.Contains(msg, "interpreter") || strings.Contains(msg, "Python") {
				t.Errorf("%s in %s: %q blames the interpreter", name, c.dir, msg)
			}
		}
	}
	t.Setenv("TMPDIR", base)
	dir, err := scratchDir("x-")
	if err != nil || !strings.HasPrefix(dir, base) {
		t.Fatalf("usable TMPDIR: %q %v", dir, err)
	}
}
