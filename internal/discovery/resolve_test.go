package discovery

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

func mustRef(t *testing.T, s string) ObjectRef {
	t.Helper()
	r, err := ParseObjectRef(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func installedDecl(t *testing.T, dist, name, value string) Declaration {
	return Declaration{Name: name, Value: value, Ref: mustRef(t, value), Origin: OriginInstalled,
		Distribution: dist, Version: "1.0", Location: "/site-packages/" + dist}
}

func loadFixture(t *testing.T, name string) *Project {
	t.Helper()
	p, err := LoadProject(filepath.Join("testdata", "projects", name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestResolveSingleProjectDeclaration(t *testing.T) {
	p := loadFixture(t, "pep621_groups")
	res, err := Resolve(p, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	if res.Chosen.Name != "enterprise" || len(res.All) != 1 || len(res.Warnings) != 0 {
		t.Errorf("resolution = %+v", res)
	}
}

func TestResolveEditableInstallCountsOnce(t *testing.T) {
	p := loadFixture(t, "pep621_groups") // project name "Acme_Prep"
	// The same project installed (normalized name acme-prep), the value written with other spacing.
	in := installedDecl(t, "acme.prep", "enterprise", "acme_prep.provider : PreparationProvider")
	in.Editable = true
	res, err := Resolve(p, []Declaration{in, in}, "")
	if err != nil {
		t.Fatalf("Resolve: %v", err)
	}
	if len(res.All) != 1 || res.Chosen.Origin != OriginPEP621 || !strings.Contains(res.Chosen.AlsoInstalled, "acme.prep 1.0") {
		t.Errorf("resolution = %+v", res)
	}
	if !strings.Contains(res.Chosen.Where(), "(editable)") {
		t.Errorf("Where() = %q should mention the editable install", res.Chosen.Where())
	}
}

func TestResolveInstallFromProjectDirCountsOnce(t *testing.T) {
	p := loadFixture(t, "pep621_groups")
	in := installedDecl(t, "renamed-dist", "enterprise", "acme_prep.provider:PreparationProvider")
	in.SourceURL = "file://" + strings.ReplaceAll(p.Dir, " ", "%20")
	res, err := Resolve(p, []Declaration{in}, "")
	if err != nil || len(res.All) != 1 || res.Chosen.AlsoInstalled == "" {
		t.Fatalf("resolution = %+v, %v", res, err)
	}
	in.SourceURL = "file:///somewhere/else"
	if _, err := Resolve(p, []Declaration{in}, ""); err == nil {
		t.Error("an install from another directory under another name should conflict")
	}
}

func TestResolveStaleOwnInstallIsAWarning(t *testing.T) {
	p := loadFixture(t, "pep621_groups")
	stale := installedDecl(t, "acme-prep", "old-name", "acme_prep.provider:PreparationProvider")
	res, err := Resolve(p, []Declaration{stale}, "")
	if err != nil {
		t.Fatalf("Resolve: %v", err)
	}
	if res.Chosen.Name != "enterprise" || len(res.All) != 1 || len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "stale") {
		t.Errorf("resolution = %+v", res)
	}
}

func TestResolveDynamicProjectUsesInstalled(t *testing.T) {
	p := loadFixture(t, "dynamic")
	in := installedDecl(t, "dyn", "dyn", "dyn.provider:Provider")
	res, err := Resolve(p, []Declaration{in}, "")
	if err != nil || res.Chosen.Origin != OriginInstalled || res.Chosen.Distribution != "dyn" {
		t.Fatalf("resolution = %+v, %v", res, err)
	}
}

func TestResolveConflicts(t *testing.T) {
	cases := []struct {
		name      string
		project   string
		installed []Declaration
		want      int
	}{
		{"two names in the project", "two", nil, 2},
		{"project and another distribution", "pep621_groups",
			[]Declaration{installedDecl(t, "other-dist", "other", "other.provider:Provider")}, 2},
		{"same name from two distributions", "none",
			[]Declaration{installedDecl(t, "dist-a", "enterprise", "a.provider:Provider"),
				installedDecl(t, "dist-b", "enterprise", "a.provider:Provider")}, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Resolve(loadFixture(t, c.project), c.installed, "")
			var ce *ConflictError
			if !errors.As(err, &ce) {
				t.Fatalf("error = %v, want *ConflictError", err)
			}
			if len(ce.Declarations) != c.want || ce.ExitCode() != 2 || ce.Clause() != "EP-CONFLICT" {
				t.Errorf("conflict = %+v", ce)
			}
			msg := err.Error()
			for _, d := range ce.Declarations {
				if !strings.Contains(msg, d.Where()) || !strings.Contains(msg, d.Name+" = ") {
					t.Errorf("message %q does not list %s from %s", msg, d.Name, d.Where())
				}
			}
			if !strings.Contains(msg, "--provider") || !strings.Contains(msg, "refuses to start") {
				t.Errorf("message %q lacks the way out", msg)
			}
		})
	}
}

func TestResolvePick(t *testing.T) {
	p := loadFixture(t, "two")
	res, err := Resolve(p, nil, "second")
	if err != nil {
		t.Fatal(err)
	}
	if res.Chosen.Name != "second" || len(res.All) != 2 || len(res.Warnings) != 1 ||
		!strings.Contains(res.Warnings[0], "platform itself would refuse to start") {
		t.Errorf("resolution = %+v", res)
	}
	if _, err := Resolve(p, nil, "third"); err == nil || !strings.Contains(err.Error(), "first") || !strings.Contains(err.Error(), "second") {
		t.Errorf("unknown pick error = %v", err)
	}

	// The same name from two distributions needs name@distribution.
	none := loadFixture(t, "none")
	inst := []Declaration{installedDecl(t, "dist-a", "enterprise", "a.provider:Provider"),
		installedDecl(t, "Dist_B", "enterprise", "b.provider:Provider")}
	if _, err := Resolve(none, inst, "enterprise"); err == nil || !strings.Contains(err.Error(), "NAME@DISTRIBUTION") {
		t.Errorf("ambiguous pick error = %v", err)
	}
	res, err = Resolve(none, inst, "enterprise@dist-b")
	if err != nil || res.Chosen.Ref.Module != "b.provider" {
		t.Errorf("pick by distribution = %+v, %v", res, err)
	}

	// Picking the only provider adds no warning.
	res, err = Resolve(loadFixture(t, "pep621_groups"), nil, "enterprise")
	if err != nil || len(res.Warnings) != 0 {
		t.Errorf("pick of the only provider = %+v, %v", res, err)
	}
}

func TestResolveNoProvider(t *testing.T) {
	_, err := Resolve(loadFixture(t, "none"), nil, "")
	var ne *NoProviderError
	if !errors.As(err, &ne) {
		t.Fatalf("error = %v, want *NoProviderError", err)
	}
	want := "[project.entry-points.\"astrabox.providers.runtime_preparation\"]\nmy_deployment = \"my_deployment.provider:PreparationProvider\"\n"
	if ne.Snippet != want {
		t.Errorf("snippet = %q, want %q", ne.Snippet, want)
	}
	for _, l := range strings.Split(strings.TrimSpace(want), "\n") {
		if !strings.Contains(err.Error(), l) {
			t.Errorf("message %q lacks the snippet line %q", err.Error(), l)
		}
	}
	if ne.ExitCode() != 2 || ne.Clause() != "EP-NONE" || ne.Dynamic {
		t.Errorf("no-provider error = %+v", ne)
	}

	_, err = Resolve(loadFixture(t, "dynamic"), nil, "")
	if !errors.As(err, &ne) || !ne.Dynamic || !strings.Contains(err.Error(), "dynamic") {
		t.Errorf("dynamic project error = %v", err)
	}
	_, err = Resolve(nil, nil, "")
	if !errors.As(err, &ne) || !strings.Contains(ne.Snippet, "my_provider = \"my_provider.provider:") {
		t.Errorf("nil project error = %v", err)
	}
}

func TestNormalizeName(t *testing.T) {
	for in, want := range map[string]string{"Acme_Prep": "acme-prep", "a.-_b": "a-b", "friendly-bard": "friendly-bard", "FRIENDLY__BARD": "friendly-bard"} {
		if got := NormalizeName(in); got != want {
			t.Errorf("NormalizeName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParseObjectRef(t *testing.T) {
	good := []struct {
		in, module, attr string
		extras           []string
	}{
		{"pkg.mod:Cls", "pkg.mod", "Cls", nil},
		{"pkg.mod:Outer.Inner", "pkg.mod", "Outer.Inner", nil},
		{"  pkg.mod  :  Cls  ", "pkg.mod", "Cls", nil},
		{"pkg.mod:Cls [a, b-c]", "pkg.mod", "Cls", []string{"a", "b-c"}},
		{"pkg.mod:Cls[ a ]  ", "pkg.mod", "Cls", []string{"a"}},
		{"pkg.mod:Cls []", "pkg.mod", "Cls", nil},
		{"pkg", "pkg", "", nil},
		{"_p1.été:Ünïcode", "_p1.été", "Ünïcode", nil},
	}
	for _, g := range good {
		r, err := ParseObjectRef(g.in)
		if err != nil || r.Module != g.module || r.Attr != g.attr || strings.Join(r.Extras, ",") != strings.Join(g.extras, ",") {
			t.Errorf("ParseObjectRef(%q) = %+v, %v", g.in, r, err)
		}
	}
	for _, bad := range []string{"", "pkg.:Cls", ".pkg:Cls", "pkg:", "pkg:Cls:Other", "pkg:1Cls", "pkg-name:Cls",
		"pkg:Cls [a", "pkg:Cls a]", "pkg:Cls [a] [b]", "pkg:Cls [a,,b]", "pkg:Cls [a] x", "pkg mod:Cls"} {
		if r, err := ParseObjectRef(bad); err == nil {
			t.Errorf("ParseObjectRef(%q) = %+v, want an error", bad, r)
		}
	}
	if got := mustRef(t, " a.b : C [x ,y] ").String(); got != "a.b:C [x,y]" {
		t.Errorf("String() = %q", got)
	}
}

func TestErrorFormat(t *testing.T) {
	cause := errors.New("boom")
	e := &Error{File: "pyproject.toml", Line: 12, Column: 5, Message: "bad thing", Hint: "do this", Err: cause}
	if got, want := e.Error(), "pyproject.toml:12:5: bad thing: boom\n  hint: do this"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if !errors.Is(e, cause) {
		t.Error("Error does not wrap its cause")
	}
	if got := (&Error{File: "setup.cfg", Line: 3, Message: "m"}).Error(); got != "setup.cfg:3: m" {
		t.Errorf("Error() = %q", got)
	}
	if got := (&Error{Message: "m"}).Error(); got != "m" {
		t.Errorf("Error() = %q", got)
	}
}
