package discovery

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// loadWithin runs LoadProject on dir and fails the test if it does not return within a few seconds (a FIFO
// used to block it for good).
func loadWithin(t *testing.T, dir string) (*Project, error) {
	t.Helper()
	type out struct {
		p   *Project
		err error
	}
	ch := make(chan out, 1)
	go func() {
		p, err := LoadProject(dir)
		ch <- out{p, err}
	}()
	select {
	case o := <-ch:
		return o.p, o.err
	case <-time.After(20 * time.Second):
		t.Fatalf("LoadProject(%s) did not return", dir)
		return nil, nil
	}
}

// wantError checks that err is an *Error naming file (and line, when line > 0) and saying want.
func wantError(t *testing.T, err error, file string, line int, want string) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T), want a discovery *Error", err, err)
	}
	if e.File != file || line > 0 && e.Line != line || !strings.Contains(err.Error(), want) || e.Hint == "" {
		t.Fatalf("error %q (file %s line %d), want file %s line %d saying %q with a hint", err, e.File, e.Line, file, line, want)
	}
}

func TestProjectFilesMustBeRegular(t *testing.T) {
	dir := t.TempDir()
	py := filepath.Join(dir, "pyproject.toml")
	if err := syscall.Mkfifo(py, 0o644); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	_, err := loadWithin(t, dir)
	wantError(t, err, py, 0, "a named pipe (FIFO)")

	// The project root search does not walk past a FIFO to a parent either: the error names the file.
	_, err = FindProjectRoot(filepath.Join(dir))
	wantError(t, err, py, 0, "a named pipe (FIFO)")

	dir2 := t.TempDir()
	py2 := filepath.Join(dir2, "pyproject.toml")
	if err := os.Symlink("/dev/zero", py2); err != nil {
		t.Fatal(err)
	}
	_, err = loadWithin(t, dir2)
	wantError(t, err, py2, 0, "a device")

	dir3 := t.TempDir()
	cfg := filepath.Join(dir3, "setup.cfg")
	if err := os.Mkdir(cfg, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir3, "pyproject.toml"), []byte("[project]\nname = \"x\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = loadWithin(t, dir3)
	wantError(t, err, cfg, 0, "a directory")
}

func TestProjectFileSizeBound(t *testing.T) {
	dir := t.TempDir()
	py := filepath.Join(dir, "pyproject.toml")
	big := "[project]\nname = \"x\"\n" + strings.Repeat("# padding\n", MaxProjectFileSize/10+1)
	if err := os.WriteFile(py, []byte(big), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := loadWithin(t, dir)
	wantError(t, err, py, 0, "more than the 1048576 bytes")

	// A file just under the bound still loads.
	ok := "[project]\nname = \"x\"\n" + strings.Repeat("# padding\n", MaxProjectFileSize/10-10)
	if err := os.WriteFile(py, []byte(ok), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := loadWithin(t, dir); err != nil {
		t.Fatal(err)
	}
}

func TestTOMLShapeLimits(t *testing.T) {
	cases := []struct {
		name, src string
		line      int
		want      string
	}{
		// The inputs that crashed the decoder: 10,000 nested inline tables, a 20,000-part table header.
		{"nested inline tables", "[project]\nname = \"x\"\n\na = " + strings.Repeat("{b = ", 10000) + "1" + strings.Repeat("}", 10000) + "\n",
			4, "nest more than 32 deep"},
		{"long table header", "[project]\nname = \"x\"\n[" + strings.Repeat("a.", 19999) + "a]\n", 3, "table header of more than 64 dotted parts"},
		{"nested arrays", "x = 1\ny = " + strings.Repeat("[", 40) + strings.Repeat("]", 40) + "\n", 2, "nest more than 32 deep"},
		{"long dotted key", "[tool]\n" + strings.Repeat("k.", 70) + "k = 1\n", 2, "key path of more than 64 parts"},
		{"long path through inline tables", "[a.b.c.d]\nk = " + strings.Repeat("{e.f = ", 31) + "1" + strings.Repeat("}", 31) + "\n",
			2, "key path of"},
		{"30,000 tables, cut at the bound", "[project]\nname = \"x\"\n" + strings.Repeat("[t]\n", 30000), 19999 + 2, "more than 20000 tables and keys"},
		{"long paths add up", "[project]\nname = \"x\"\n[" + strings.Repeat("a.", 62) + "a]\n" + strings.Repeat("k = 1\n", 2000),
			3 + (MaxTOMLPathParts-66)/64 + 1, "paths have more than 100000 parts in all"},
		{"multi-line string before", "s = \"\"\"\n\n\n\"\"\"\nv = " + strings.Repeat("[", 33) + strings.Repeat("]", 33) + "\n", 5, "nest more than"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			py := filepath.Join(dir, "pyproject.toml")
			if err := os.WriteFile(py, []byte(c.src), 0o644); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			_, err := loadWithin(t, dir)
			wantError(t, err, py, c.line, c.want)
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("refusing took %s", d)
			}
		})
	}
}

// TestTOMLShapeAcceptsRealFiles checks that the pre-scan does not refuse what real files hold: brackets,
// braces and dots inside strings and comments, deep-but-allowed nesting, long-but-allowed keys.
func TestTOMLShapeAcceptsRealFiles(t *testing.T) {
	src := `# [not.a.header] {{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{
[project]
name = "x"
description = "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[ and a.b.c.d.e.f.g"
readme = '''
{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{
'''
keywords = ["a.b.c", 'x.y.z', """{""", '''[''']

[project.entry-points."astrabox.providers.runtime_preparation"]
enterprise = "my_pkg.provider:Provider"

[tool.poetry.group.dev.dependencies]
pytest = { version = "^8", extras = ["a", "b"], markers = "python_version >= '3.9'" }
deep = ` + strings.Repeat("[", MaxTOMLNesting) + strings.Repeat("]", MaxTOMLNesting) + `
` + strings.Repeat("k.", MaxTOMLKeyParts-6) + `k = 1
`
	if err := checkTOMLShape("pyproject.toml", src); err != nil {
		t.Fatal(err)
	}
	if _, err := decodeTOML("pyproject.toml", src); err != nil {
		t.Fatal(err)
	}
	// Every project under testdata passes the pre-scan.
	files, _ := filepath.Glob("testdata/projects/*/*.toml")
	if len(files) == 0 {
		t.Fatal("no testdata")
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := checkTOMLShape(f, string(b)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

func TestTextEncoding(t *testing.T) {
	utf16 := func(s string) []byte {
		b := []byte{0xff, 0xfe}
		for _, r := range s {
			b = append(b, byte(r), 0)
		}
		return b
	}
	cases := []struct {
		name, file string
		body       []byte
		line       int
		want       string
	}{
		{"UTF-16 setup.cfg", "setup.cfg", utf16("[metadata]\nname = x\n"), 1, "is encoded in UTF-16; it must be UTF-8"},
		{"UTF-16 without BOM", "setup.cfg", utf16("[metadata]\nname = x\n")[2:], 1, "UTF-16"},
		{"UTF-16 pyproject", "pyproject.toml", utf16("[project]\nname = \"x\"\n"), 1, "UTF-16"},
		{"Latin-1 setup.cfg", "setup.cfg", []byte("[metadata]\nname = x\nauthor = Jos\xe9\n"), 3, "is not valid UTF-8"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, c.file)
			if err := os.WriteFile(p, c.body, 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := loadWithin(t, dir)
			wantError(t, err, p, c.line, c.want)
			if strings.Contains(err.Error(), "before the first [section]") {
				t.Errorf("misleading message: %v", err)
			}
		})
	}
	// A UTF-8 byte-order mark is fine, as configparser accepts it through setuptools.
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "setup.cfg"), []byte("\ufeff[metadata]\nname = bom\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := loadWithin(t, dir)
	if err != nil || p.Name != "bom" {
		t.Fatalf("UTF-8 BOM: %v %+v", err, p)
	}
}

func mkfifo(path string) error { return syscall.Mkfifo(path, 0o644) }
