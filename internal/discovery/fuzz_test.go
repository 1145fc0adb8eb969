package discovery

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// The fuzz targets of the discovery decoders. Their seed corpora live in testdata/fuzz/FuzzX/ and are
// replayed by a plain `go test`; `go test -fuzz=FuzzX ./internal/discovery` explores further.

// scratch is one directory per fuzzing process, reused by every input (a fresh temporary directory per
// input made fuzzing disk-bound). TestMain removes it.
var scratch struct {
	sync.Mutex
	dir string
}

func TestMain(m *testing.M) {
	code := m.Run()
	if scratch.dir != "" {
		os.RemoveAll(scratch.dir)
	}
	os.Exit(code)
}

// loadSources writes the given project files into a fresh directory and loads it. Every failure must be a
// discovery *Error naming a file, never a panic.
func loadSources(t *testing.T, files map[string]string) (*Project, error) {
	scratch.Lock()
	defer scratch.Unlock()
	if scratch.dir == "" {
		d, err := os.MkdirTemp("", "astrabox-fuzz-")
		if err != nil {
			t.Fatal(err)
		}
		scratch.dir = d
	}
	dir := scratch.dir
	for _, name := range []string{"pyproject.toml", "setup.cfg", "setup.py", "astrabox.toml"} {
		os.Remove(filepath.Join(dir, name))
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p, err := LoadProject(dir)
	if err != nil {
		var e *Error
		if !errors.As(err, &e) || e.File == "" {
			t.Fatalf("error without a file: %v (%T)", err, err)
		}
		return nil, err
	}
	return p, nil
}

// checkProject asserts what every loaded project must satisfy.
func checkProject(t *testing.T, p *Project) {
	for _, d := range p.Declarations {
		if d.Ref.Module == "" || d.Ref.Attr == "" || d.File == "" || d.Line < 0 {
			t.Fatalf("declaration without a module, class or place: %+v", d)
		}
	}
	if len(p.CodeRoots) == 0 {
		t.Fatalf("no code root")
	}
	for _, r := range p.CodeRoots {
		if !filepath.IsAbs(r) {
			t.Fatalf("code root %q is not absolute", r)
		}
	}
}

// FuzzPyproject feeds pyproject.toml documents (PEP 621, Poetry, setuptools, hatch and flit tables).
func FuzzPyproject(f *testing.F) {
	f.Fuzz(func(t *testing.T, src string) {
		p, err := loadSources(t, map[string]string{"pyproject.toml": src})
		if err == nil {
			checkProject(t, p)
			keyLines(src) // the position scanner must stop on anything the decoder accepted
		}
	})
}

// FuzzSetupCfg feeds setup.cfg documents, alone and next to a minimal pyproject.toml.
func FuzzSetupCfg(f *testing.F) {
	f.Fuzz(func(t *testing.T, src string, withPyproject bool) {
		files := map[string]string{"setup.cfg": src}
		if withPyproject {
			files["pyproject.toml"] = "[build-system]\nrequires = [\"setuptools\"]\n"
		}
		if p, err := loadSources(t, files); err == nil {
			checkProject(t, p)
		}
	})
}

// FuzzObjectRef feeds entry-point object references: a parsed reference renders to a form that parses back
// to the same reference.
func FuzzObjectRef(f *testing.F) {
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseObjectRef(s)
		if err != nil {
			return
		}
		again, err := ParseObjectRef(r.String())
		if err != nil || !again.Equal(r) {
			t.Fatalf("%q parsed to %+v, rendered %q, reparsed to %+v (%v)", s, r, r.String(), again, err)
		}
		if r.Target() != strings.SplitN(r.String(), " ", 2)[0] {
			t.Fatalf("target %q does not start the rendering %q", r.Target(), r.String())
		}
	})
}

// FuzzINI feeds the INI reader directly: options keep one line number per value line, and list items are
// taken from those lines.
func FuzzINI(f *testing.F) {
	f.Fuzz(func(t *testing.T, src string) {
		ini, err := parseINI("setup.cfg", src)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Line < 1 {
				t.Fatalf("error without a line: %v", err)
			}
			return
		}
		lines := strings.Count(src, "\n") + 1
		for _, s := range ini.Sections {
			for _, o := range s.Options {
				if len(o.Lines) != len(o.LineN) || len(o.Lines) == 0 {
					t.Fatalf("option %q: %d values, %d line numbers", o.Name, len(o.Lines), len(o.LineN))
				}
				items, at := o.listItems()
				if len(items) != len(at) {
					t.Fatalf("option %q: %d items, %d lines", o.Name, len(items), len(at))
				}
				for _, n := range at {
					if n < o.Line || n > lines {
						t.Fatalf("option %q at line %d: item at line %d of %d", o.Name, o.Line, n, lines)
					}
				}
			}
		}
	})
}

// FuzzTOMLDeep builds the deep and long structures random mutation never reaches (the nesting depths and
// key lengths that crashed the TOML decoder) from a few numbers: nesting depth, key parts, the kind of
// structure, and a prefix of ordinary content. Within the limits the document must load; past them it must
// be refused before decoding, naming the file and the line.
func FuzzTOMLDeep(f *testing.F) {
	f.Fuzz(func(t *testing.T, depth, parts uint16, kind uint8, prefix string) {
		depth, parts = depth%20000, parts%20000
		if !bareKey.MatchString(prefix) || len(prefix) > 40 {
			prefix = ""
		}
		key := "k" + prefix
		var body string
		over := false
		switch kind % 4 {
		case 0: // nested inline tables
			body = "a = " + strings.Repeat("{b = ", int(depth)) + "1" + strings.Repeat("}", int(depth)) + "\n"
			over = depth > MaxTOMLNesting || 3+int(depth) > MaxTOMLKeyParts
		case 1: // nested arrays
			body = "a = " + strings.Repeat("[", int(depth)) + "1" + strings.Repeat("]", int(depth)) + "\n"
			over = depth > MaxTOMLNesting
		case 2: // a long table header
			body = "[" + strings.Repeat(key+".", int(parts)) + key + "]\n"
			over = int(parts)+1 > MaxTOMLKeyParts
		case 3: // a long dotted key
			body = strings.Repeat(key+".", int(parts)) + key + " = 1\n"
			over = 2+int(parts)+1 > MaxTOMLKeyParts
		}
		src := "[project]\nname = \"deep\"\n\n[tool.x]\n" + body
		_, err := loadSources(t, map[string]string{"pyproject.toml": src})
		if over {
			var e *Error
			if !errors.As(err, &e) || e.Line != 5 || !strings.Contains(e.Message, "astrabox accepts") {
				t.Fatalf("depth %d parts %d kind %d: want a refusal at line 5, got %v", depth, parts, kind%4, err)
			}
		} else if err != nil {
			t.Fatalf("depth %d parts %d kind %d: within the limits, got %v", depth, parts, kind%4, err)
		}
	})
}
