package discovery

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
)

func TestKeyLines(t *testing.T) {
	src := `# comment [not.a.table]
title = "x # not a comment"
multi = """
[fake.table]
fake = 1
"""
lit = '''
also = "fake"'''
arr = [
  "a", { b = 1 },
  [2, 3],
]
[a . "b.c" . 'd']
e = 1
"f\u0067" = { h = { i = 2 }, "j k" = 3 }
[[arr2]]
n = 1
[x]
y.z = 4.5
when = 1979-05-27T07:32:00Z
`
	var m map[string]any
	if _, err := toml.Decode(src, &m); err != nil {
		t.Fatalf("fixture is not valid TOML: %v", err)
	}
	got := keyLines(src)
	want := map[string]int{
		pathKey("title"): 2, pathKey("multi"): 3, pathKey("lit"): 7, pathKey("arr"): 9,
		pathKey("a"): 13, pathKey("a", "b.c"): 13, pathKey("a", "b.c", "d"): 13,
		pathKey("a", "b.c", "d", "e"):  14,
		pathKey("a", "b.c", "d", "fg"): 15, pathKey("a", "b.c", "d", "fg", "h"): 15, pathKey("a", "b.c", "d", "fg", "h", "i"): 15,
		pathKey("a", "b.c", "d", "fg", "j k"): 15,
		pathKey("arr2"):                       16, pathKey("arr2", "n"): 17,
		pathKey("x"): 18, pathKey("x", "y"): 19, pathKey("x", "y", "z"): 19, pathKey("x", "when"): 20,
	}
	if !reflect.DeepEqual(got, want) {
		for k, v := range got {
			if want[k] != v {
				t.Errorf("%q: got line %d, want %d", strings.ReplaceAll(k, "\x00", "."), v, want[k])
			}
		}
		for k, v := range want {
			if _, ok := got[k]; !ok {
				t.Errorf("%q (line %d) missing", strings.ReplaceAll(k, "\x00", "."), v)
			}
		}
	}
}

func TestParseINI(t *testing.T) {
	src := "; leading comment\n[Section]\nKey = value\nOther: with colon = kept\nlist =\n  one\n\n  # comment\n  two\n\tthree\nafter = x\n[options.entry_points]\n"
	f, err := parseINI("setup.cfg", src)
	if err != nil {
		t.Fatal(err)
	}
	s := f.section("Section")
	if s == nil || f.section("section") != nil {
		t.Fatalf("sections must be case-sensitive: %+v", f.Sections)
	}
	if o := s.option("Key"); o == nil || o.Lines[0] != "value" || s.option("key") != nil {
		t.Errorf("Key = %+v", o)
	}
	if o := s.option("Other"); o == nil || o.Lines[0] != "with colon = kept" {
		t.Errorf("Other = %+v", o)
	}
	items, lines := s.option("list").listItems()
	if !reflect.DeepEqual(items, []string{"one", "two", "three"}) || !reflect.DeepEqual(lines, []int{6, 9, 10}) {
		t.Errorf("list = %q at %v", items, lines)
	}
	if o := s.option("after"); o == nil || o.Line != 11 {
		t.Errorf("after = %+v", o)
	}
	if items, _ := (&iniOption{Lines: []string{"a = b, c = d"}}).listItems(); !reflect.DeepEqual(items, []string{"a = b", "c = d"}) {
		t.Errorf("single-line list = %q", items)
	}

	for _, bad := range []struct{ src, want string }{
		{"key = 1\n", "setup.cfg:1:1: text before the first [section] header"},
		{"[a]\nx = 1\n[a]\n", "setup.cfg:3:1: section [a] appears twice"},
		{"[a]\nx = 1\nx = 2\n", `setup.cfg:3:1: option "x" appears twice`},
		{"[a]\njust words\n", `setup.cfg:2:1: cannot parse line "just words"`},
	} {
		_, err := parseINI("setup.cfg", bad.src)
		var e *Error
		if !errors.As(err, &e) || !strings.HasPrefix(err.Error(), bad.want) {
			t.Errorf("parseINI(%q) = %v, want %q", bad.src, err, bad.want)
		}
	}
}
