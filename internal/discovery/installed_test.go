package discovery

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// pythons returns the CPython 3.9-3.13 interpreters installed under pyenv, by version.
func pythons(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, minor := range []string{"3.9", "3.10", "3.11", "3.12", "3.13"} {
		matches, _ := filepath.Glob("/root/.pyenv/versions/" + minor + ".*/bin/python3")
		for _, m := range matches {
			// Avoid 3.1x matching 3.1.
			if strings.HasPrefix(filepath.Base(filepath.Dir(filepath.Dir(m))), minor+".") {
				out[minor] = m
			}
		}
	}
	return out
}

// writeDist creates a *.dist-info directory with METADATA, entry_points.txt and optional direct_url.json.
func writeDist(t *testing.T, site, name, version, entryPoints, directURL string) string {
	t.Helper()
	dir := filepath.Join(site, strings.ReplaceAll(name, "-", "_")+"-"+version+".dist-info")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"METADATA":         fmt.Sprintf("Metadata-Version: 2.1\nName: %s\nVersion: %s\n", name, version),
		"entry_points.txt": entryPoints,
	}
	if directURL != "" {
		files["direct_url.json"] = directURL
	}
	for n, c := range files {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestInstalledEntryPoints(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python")
	}
	found := pythons(t)
	if len(found) == 0 {
		t.Skip("no CPython 3.9-3.13 under /root/.pyenv/versions")
	}
	base := t.TempDir()
	site1, site2, project := filepath.Join(base, "site1"), filepath.Join(base, "site2"), filepath.Join(base, "project")
	distDir := writeDist(t, site1, "Acme_Fake", "1.2",
		"[console_scripts]\nacme = acme.cli:main\n\n[astrabox.providers.runtime_preparation]\nenterprise = acme_fake.provider:Provider [extra]\n",
		`{"url": "file:///src/acme-fake", "dir_info": {"editable": true}}`)
	// A second copy of the same distribution later on the path: hidden from 3.10 on, as entry_points() does.
	writeDist(t, site2, "acme-fake", "0.9", "[astrabox.providers.runtime_preparation]\nold = acme_fake.old:Provider\n", "")
	writeDist(t, site2, "unrelated", "3.0", "[other.group]\nx = y:z\n", "")
	// Build leftovers in the project itself must not count as installed.
	writeDist(t, project, "leftover", "0.1", "[astrabox.providers.runtime_preparation]\nleft = leftover:Provider\n", "")
	t.Setenv("PYTHONPATH", strings.Join([]string{site1, site2, project}, string(os.PathListSeparator)))

	for minor, py := range found {
		t.Run(minor, func(t *testing.T) {
			got, err := InstalledEntryPoints(context.Background(), py, project)
			if err != nil {
				t.Fatal(err)
			}
			want := 1
			if minor == "3.9" {
				want = 2 // 3.9's entry_points() does not drop shadowed distributions.
			}
			if len(got) != want {
				t.Fatalf("got %d entry points %+v, want %d", len(got), got, want)
			}
			d := got[0]
			if d.Name != "enterprise" || d.Ref.Target() != "acme_fake.provider:Provider" || d.Ref.Extras[0] != "extra" ||
				d.Distribution != "Acme_Fake" || d.Version != "1.2" || d.Location != site1 || !d.Editable ||
				d.SourceURL != "file:///src/acme-fake" || d.Origin != OriginInstalled ||
				d.File != filepath.Join(distDir, "entry_points.txt") || d.Line != 5 {
				t.Errorf("entry point = %+v", d)
			}
			if want == 2 && (got[1].Name != "old" || got[1].Version != "0.9" || got[1].Editable) {
				t.Errorf("shadowed entry point = %+v", got[1])
			}
		})
	}
	t.Run("project directory kept only when not named", func(t *testing.T) {
		for _, py := range found {
			got, err := InstalledEntryPoints(context.Background(), py, "")
			if err != nil {
				t.Fatal(err)
			}
			names := ""
			for _, d := range got {
				names += d.Name + " "
			}
			if !strings.Contains(names, "left ") {
				t.Errorf("without a project directory the leftover on PYTHONPATH should be listed; got %q", names)
			}
			break
		}
	})
}

func TestInstalledEntryPointsResolveWithProject(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python")
	}
	found := pythons(t)
	py := found["3.11"]
	if py == "" {
		for _, p := range found {
			py = p
		}
	}
	if py == "" {
		t.Skip("no CPython 3.9-3.13 under /root/.pyenv/versions")
	}
	site := t.TempDir()
	writeDist(t, site, "acme-prep", "1.0", "[astrabox.providers.runtime_preparation]\nenterprise = acme_prep.provider:PreparationProvider\n",
		`{"url": "file:///x", "dir_info": {"editable": true}}`)
	t.Setenv("PYTHONPATH", site)
	p := loadFixture(t, "pep621_groups")
	installed, err := InstalledEntryPoints(context.Background(), py, p.Dir)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Resolve(p, installed, "")
	if err != nil || len(res.All) != 1 || res.Chosen.AlsoInstalled == "" {
		t.Fatalf("resolution = %+v, %v", res, err)
	}
}

func TestInstalledEntryPointsErrors(t *testing.T) {
	dir := t.TempDir()
	notPython := filepath.Join(dir, "fake-python")
	if err := os.WriteFile(notPython, []byte("#!/bin/sh\necho 'hello from a fake' >&2\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := InstalledEntryPoints(context.Background(), notPython, dir)
	var e *Error
	if !errors.As(err, &e) || !strings.Contains(err.Error(), "listing installed entry points failed") ||
		!strings.Contains(err.Error(), "hello from a fake") {
		t.Errorf("error = %v", err)
	}
	silent := filepath.Join(dir, "silent-python")
	if err := os.WriteFile(silent, []byte("#!/bin/sh\necho noise\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := InstalledEntryPoints(context.Background(), silent, dir); err == nil || !strings.Contains(err.Error(), "printed no result") {
		t.Errorf("error = %v", err)
	}
	if _, err := InstalledEntryPoints(context.Background(), filepath.Join(dir, "missing"), dir); !errors.As(err, &e) {
		t.Errorf("missing interpreter error = %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := InstalledEntryPoints(ctx, notPython, dir); err == nil {
		t.Error("a cancelled context still succeeded")
	}
}
