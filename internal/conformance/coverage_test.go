package conformance

import (
	"strings"
	"testing"
)

func TestCoverageSettings(t *testing.T) {
	s, err := ParseSettings(map[string]any{"coverage": false, "coverage-include": []any{"src/*"}, "coverage-omit": []any{"src/vendored/*"}}, "pyproject.toml", "/p")
	if err != nil {
		t.Fatal(err)
	}
	if s.Coverage == nil || *s.Coverage || strings.Join(s.CoverageInclude, ",") != "src/*" || strings.Join(s.CoverageOmit, ",") != "src/vendored/*" {
		t.Errorf("settings %+v", s)
	}
	for raw, want := range map[string]map[string]any{
		"coverage: must be true or false":             {"coverage": "yes"},
		"coverage-omit: must be a list of file globs": {"coverage-omit": "src/x"},
	} {
		if _, err := ParseSettings(want, "pyproject.toml", "/p"); err == nil || !strings.Contains(err.Error(), raw) {
			t.Errorf("%v: %v", want, err)
		}
	}
}

func TestCoverageDefaults(t *testing.T) {
	on, off := true, false
	py311, py312 := [3]int{3, 11, 7}, [3]int{3, 12, 1}
	none := &Settings{}
	cases := []struct {
		s       *Settings
		o       Options
		version [3]int
		want    bool
		offNote bool
	}{
		{none, Options{}, py312, true, false},
		{none, Options{}, py311, false, true}, // off by default where it is costly, and the report says so
		{none, Options{Coverage: &on}, py311, true, false},
		{&Settings{Coverage: &on}, Options{}, py311, true, false},
		{&Settings{Coverage: &on}, Options{Coverage: &off}, py312, false, false},
		{&Settings{Coverage: &off}, Options{}, py312, false, false},
	}
	for i, c := range cases {
		got := coverageOptions(c.s, c.o, c.version)
		if (got != nil) != c.want {
			t.Errorf("case %d: coverage %v, want %v", i, got != nil, c.want)
		}
		if p := coverageOff(c.s, c.o, c.version); (p != nil) != c.offNote {
			t.Errorf("case %d: off note %+v", i, p)
		}
	}
	s := &Settings{CoverageInclude: []string{"a"}, CoverageOmit: []string{"b"}}
	if got := coverageOptions(s, Options{}, py312); !got.Enabled || got.Include[0] != "a" || got.Omit[0] != "b" {
		t.Errorf("globs not passed: %+v", got)
	}
}
