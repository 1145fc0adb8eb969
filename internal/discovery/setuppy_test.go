package discovery

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const setupPy = `from setuptools import setup

setup(
    name="sp-provider",
    version="0.1",
    packages=["sp_pkg"],
    entry_points={
        "astrabox.providers.runtime_preparation": ["sp = sp_pkg.provider:Provider"],
    },
)
`

// setupPyProject writes a setup.py-only provider project (flat layout), with an optional pyproject.toml.
func setupPyProject(t *testing.T, dir, pyproject string) {
	t.Helper()
	write(t, filepath.Join(dir, "setup.py"), setupPy)
	write(t, filepath.Join(dir, "sp_pkg", "__init__.py"), "")
	write(t, filepath.Join(dir, "sp_pkg", "provider.py"), "class Provider:\n    pass\n")
	if pyproject != "" {
		write(t, filepath.Join(dir, "pyproject.toml"), pyproject)
	}
}

// newVenv makes a virtual environment without pip that sees the base interpreter's pip and setuptools
// (fast, and offline).
func newVenv(t *testing.T, base, dir string) string {
	t.Helper()
	if out, err := exec.Command(base, "-m", "venv", "--without-pip", "--system-site-packages", dir).CombinedOutput(); err != nil {
		t.Fatalf("venv: %v\n%s", err, out)
	}
	return filepath.Join(dir, "bin", "python")
}

func pipInstall(t *testing.T, py, project string, editable bool) {
	t.Helper()
	args := []string{"-m", "pip", "install", "-q", "--no-build-isolation", "--no-deps", "--no-index"}
	if editable {
		args = append(args, "-e")
	}
	cmd := exec.Command(py, append(args, project)...)
	cmd.Env = append(os.Environ(), "PIP_DISABLE_PIP_VERSION_CHECK=1", "PYTHONWARNINGS=ignore")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Skipf("pip install offline failed: %v\n%s", err, out)
	}
}

// TestSetupPyProjectNeedsInstalling: a project with only setup.py is found (not refused), and without an
// install the message says plainly to install it, naming the setup.py line that declares the group.
func TestSetupPyProjectNeedsInstalling(t *testing.T) {
	dir := t.TempDir()
	setupPyProject(t, dir, "")
	sub := filepath.Join(dir, "sp_pkg")
	root, err := FindProjectRoot(sub)
	if err != nil || root != dir {
		t.Fatalf("root of %s: %q %v", sub, root, err)
	}
	p, err := LoadProject(dir)
	if err != nil {
		t.Fatal(err)
	}
	if p.SetupPy != filepath.Join(dir, "setup.py") || p.Name != "sp-provider" || p.SetupPyGroupLine != 8 {
		t.Fatalf("project %+v", p)
	}
	_, err = Resolve(p, nil, "")
	var np *NoProviderError
	if !errors.As(err, &np) {
		t.Fatalf("want NoProviderError, got %v", err)
	}
	msg := err.Error()
	for _, want := range []string{filepath.Join(dir, "setup.py") + ":8 names the group", "python -m pip install -e .", "entry_points={"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "no pyproject.toml") {
		t.Errorf("setup.py project refused: %s", msg)
	}

	// A pyproject.toml with only [build-system] next to setup.py is the same project, told the same thing.
	dir2 := t.TempDir()
	setupPyProject(t, dir2, "[build-system]\nrequires = [\"setuptools\"]\nbuild-backend = \"setuptools.build_meta\"\n")
	p2, err := LoadProject(dir2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Resolve(p2, nil, ""); err == nil || !strings.Contains(err.Error(), "python -m pip install -e .") {
		t.Fatalf("[build-system]-only: %v", err)
	}
}

// TestSetupPyProjectInstalled reads a setup.py project's provider from installed metadata, for an editable
// install (setup.py develop, as pip -e does with older setuptools), a regular install, and a PEP 660
// editable install of a [build-system]-only pyproject (its dist-info written as pip writes it).
func TestSetupPyProjectInstalled(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python and pip")
	}
	base := pyenvPython(t, "3.9")
	if exec.Command(base, "-c", "import setuptools, pip").Run() != nil {
		t.Skip("no setuptools and pip in " + base)
	}
	root := t.TempDir()
	check := func(name, project, py string, editable bool) {
		t.Helper()
		p, err := LoadProject(project)
		if err != nil {
			t.Fatal(err)
		}
		installed, err := InstalledEntryPoints(context.Background(), py, project)
		if err != nil {
			t.Fatal(err)
		}
		res, err := Resolve(p, installed, "")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		c := res.Chosen
		if c.Name != "sp" || c.Ref.Target() != "sp_pkg.provider:Provider" || c.Origin != OriginInstalled || c.Editable != editable ||
			NormalizeName(c.Distribution) != "sp-provider" || len(res.All) != 1 {
			t.Fatalf("%s: chose %+v of %d", name, c, len(res.All))
		}
		if editable && !installedFrom(c, project) {
			t.Fatalf("%s: editable install not traced to the project: %q", name, c.SourceURL)
		}
	}

	dev := filepath.Join(root, "dev")
	setupPyProject(t, dev, "")
	devPy := newVenv(t, base, filepath.Join(root, "venv-dev"))
	pipInstall(t, devPy, dev, true)
	check("setup.py develop", dev, devPy, true)

	reg := filepath.Join(root, "reg")
	setupPyProject(t, reg, "")
	regPy := newVenv(t, base, filepath.Join(root, "venv-reg"))
	pipInstall(t, regPy, reg, false)
	check("regular install", reg, regPy, false)
	// The build leftovers of the regular install (reg/sp_provider.egg-info) do not count as installed.
	if _, err := os.Stat(filepath.Join(reg, "sp_provider.egg-info")); err == nil {
		bare := newVenv(t, base, filepath.Join(root, "venv-bare"))
		installed, err := InstalledEntryPoints(context.Background(), bare, reg)
		if err != nil || len(installed) != 0 {
			t.Fatalf("build leftovers counted as installed: %+v %v", installed, err)
		}
	}

	pep := filepath.Join(root, "pep660")
	setupPyProject(t, pep, "[build-system]\nrequires = [\"setuptools>=64\"]\nbuild-backend = \"setuptools.build_meta\"\n")
	pepPy := newVenv(t, base, filepath.Join(root, "venv-pep660"))
	site := filepath.Join(root, "venv-pep660", "lib", "python3.9", "site-packages")
	info := filepath.Join(site, "sp_provider-0.1.dist-info")
	write(t, filepath.Join(info, "METADATA"), "Metadata-Version: 2.1\nName: sp-provider\nVersion: 0.1\n")
	write(t, filepath.Join(info, "entry_points.txt"), "[astrabox.providers.runtime_preparation]\nsp = sp_pkg.provider:Provider\n")
	write(t, filepath.Join(info, "direct_url.json"), `{"url": "file://`+pep+`", "dir_info": {"editable": true}}`)
	write(t, filepath.Join(site, "__editable__.sp_provider-0.1.pth"), pep+"\n")
	check("PEP 660 editable", pep, pepPy, true)
}
