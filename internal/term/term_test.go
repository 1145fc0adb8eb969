package term

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestDetectColor(t *testing.T) {
	cases := []struct {
		name string
		env  map[string]string
		tty  bool
		want bool
	}{
		{"tty, empty env", nil, true, true},
		{"pipe, empty env", nil, false, false},
		{"NO_COLOR on tty", map[string]string{"NO_COLOR": "1"}, true, false},
		{"NO_COLOR any value", map[string]string{"NO_COLOR": "false"}, true, false},
		{"NO_COLOR empty is ignored", map[string]string{"NO_COLOR": ""}, true, true},
		{"NO_COLOR beats FORCE_COLOR", map[string]string{"NO_COLOR": "1", "FORCE_COLOR": "1"}, false, false},
		{"FORCE_COLOR without tty", map[string]string{"FORCE_COLOR": "1"}, false, true},
		{"FORCE_COLOR=0 does not force", map[string]string{"FORCE_COLOR": "0"}, false, false},
		{"FORCE_COLOR=0 keeps tty colour", map[string]string{"FORCE_COLOR": "0"}, true, true},
		{"CLICOLOR_FORCE without tty", map[string]string{"CLICOLOR_FORCE": "yes"}, false, true},
		{"CLICOLOR_FORCE=0", map[string]string{"CLICOLOR_FORCE": "0"}, false, false},
		{"CLICOLOR=0 on tty", map[string]string{"CLICOLOR": "0"}, true, false},
		{"CLICOLOR=1 on pipe", map[string]string{"CLICOLOR": "1"}, false, false},
		{"CLICOLOR_FORCE beats CLICOLOR=0", map[string]string{"CLICOLOR": "0", "CLICOLOR_FORCE": "1"}, false, true},
		{"TERM=dumb on tty", map[string]string{"TERM": "dumb"}, true, false},
	}
	for _, c := range cases {
		if got := DetectColor(env(c.env), c.tty); got != c.want {
			t.Errorf("%s: DetectColor = %v, want %v", c.name, got, c.want)
		}
	}
	if DetectColor(nil, true) != true {
		t.Error("nil getenv should fall back to the tty decision")
	}
}

var ansi = regexp.MustCompile("\x1b\\[")

func TestPlainStylesEmitNoEscapes(t *testing.T) {
	s := NewStyles(false)
	if s.Color {
		t.Fatal("plain styles report colour")
	}
	for name, st := range map[string]interface{ Render(...string) string }{
		"Pass": s.Pass, "Fail": s.Fail, "Warn": s.Warn, "Skip": s.Skip, "Flaky": s.Flaky,
		"Heading": s.Heading, "Dim": s.Dim, "Code": s.Code, "ID": s.ID, "Location": s.Location,
	} {
		if got := st.Render("FAIL x.py:3"); got != "FAIL x.py:3" {
			t.Errorf("%s renders %q with colour off", name, got)
		}
	}
}

func TestColorStylesEmitEscapes(t *testing.T) {
	s := NewStyles(true)
	if !s.Color {
		t.Fatal("colour styles do not report colour")
	}
	for name, got := range map[string]string{"Fail": s.Fail.Render("FAIL"), "Pass": s.Pass.Render("ok"), "Location": s.Location.Render("a.py:1")} {
		if !ansi.MatchString(got) {
			t.Errorf("%s has no escape sequence with colour forced: %q", name, got)
		}
	}
}

func TestWidthOfNonTerminal(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if IsTerminal(f) {
		t.Fatal("a regular file is a terminal")
	}
	if w := Width(f); w != DefaultWidth {
		t.Errorf("Width(file) = %d, want %d", w, DefaultWidth)
	}
	if IsTerminal(nil) || Width(nil) != DefaultWidth {
		t.Error("nil file: want not a terminal, default width")
	}
}

func TestTestBundle(t *testing.T) {
	ios, out, errOut := Test()
	if ios.ColorOut || ios.ColorErr || ios.OutTTY || ios.ErrTTY || ios.Width != DefaultWidth {
		t.Fatalf("test bundle: %+v", ios)
	}
	ios.Out.Write([]byte("data"))
	ios.Err.Write([]byte("status"))
	if out.String() != "data" || errOut.String() != "status" {
		t.Fatalf("buffers not wired: %q %q", out, errOut)
	}
	if ios.OutStyles().Color {
		t.Error("test bundle styles are coloured")
	}
}

// TestColouredLocationKeepsThePathWhole: a coloured path is one run of text between escape sequences, so a
// grep for it finds it in a coloured CI log.
func TestColouredLocationKeepsThePathWhole(t *testing.T) {
	const p = "src/acme_provider/provider.py:42"
	out := NewStyles(true).Location.Render(p)
	if !strings.Contains(out, p) {
		t.Errorf("coloured location %q does not hold the path as one string", out)
	}
	if n := strings.Count(out, "\x1b["); n > 2 {
		t.Errorf("coloured location uses %d escape sequences for one path: %q", n, out)
	}
}
