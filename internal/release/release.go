// Package release writes the kit's release files: one archive per platform (a tar.gz holding the binary),
// platform wheels that carry the binary as a script the way ruff's and uv's wheels do (so that pip, uv and
// pipx put `astrabox` on PATH), and a SHA-256 checksums file over all of them. `make dist` drives it through
// internal/tools/dist, which builds the binaries; everything here is pure and deterministic: the same inputs
// give the same bytes.
package release

import (
	"fmt"
	"regexp"
	"strings"
	"time"
)

// Target is one platform the kit is released for.
type Target struct {
	GOOS, GOARCH string
}

// Targets are the released platforms: Linux and macOS, amd64 and arm64.
var Targets = []Target{{"linux", "amd64"}, {"linux", "arm64"}, {"darwin", "amd64"}, {"darwin", "arm64"}}

// String is GOOS_GOARCH, as it appears in archive names.
func (t Target) String() string { return t.GOOS + "_" + t.GOARCH }

// WheelPlatforms are the platform tags of t's wheel, most specific first. The binary is static (CGO_ENABLED=0),
// so one Linux wheel serves glibc (manylinux 2.17, the manylinux2014 baseline, as ruff and uv tag theirs) and
// musl (musllinux 1.1) systems. Go 1.26 needs macOS 12 (Monterey) or later, hence macosx_12_0.
func (t Target) WheelPlatforms() ([]string, error) {
	arch := map[string]string{"amd64": "x86_64", "arm64": "aarch64"}[t.GOARCH]
	if arch == "" {
		return nil, fmt.Errorf("no wheel for architecture %q: want amd64 or arm64", t.GOARCH)
	}
	switch t.GOOS {
	case "linux":
		return []string{"manylinux_2_17_" + arch, "manylinux2014_" + arch, "musllinux_1_1_" + arch}, nil
	case "darwin":
		if t.GOARCH == "arm64" {
			arch = "arm64"
		}
		return []string{"macosx_12_0_" + arch}, nil
	}
	return nil, fmt.Errorf("no wheel for %q: want linux or darwin", t.GOOS)
}

// Project is the distribution name of the wheels: named for the kit, so that it never shadows the platform's
// own `astrabox` package.
const Project = "astrabox-kit"

// BinaryName is the command the archives and wheels carry.
const BinaryName = "astrabox"

// epoch is the time stamp of every file in the archives and wheels (zip cannot hold times before 1980), so
// that a release rebuilt from the same binaries has the same checksums.
var epoch = time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC)

// versionRe is the subset of PEP 440 a release version must be: N.N.N with an optional pre-release (aN, bN,
// rcN), post-release or dev release.
var versionRe = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+((a|b|rc)[0-9]+)?(\.post[0-9]+)?(\.dev[0-9]+)?$`)

// CheckVersion refuses a version that is not a plain release version (a leading "v" is not part of it).
func CheckVersion(v string) error {
	if !versionRe.MatchString(v) {
		return fmt.Errorf("release version %q: want MAJOR.MINOR.PATCH, optionally followed by aN, bN or rcN, "+
			".postN, .devN (PEP 440), without a leading v", v)
	}
	return nil
}

// ArchiveName is the release archive of version v for t.
func ArchiveName(v string, t Target) string {
	return fmt.Sprintf("%s_%s_%s.tar.gz", BinaryName, v, t)
}

// WheelName is the wheel file of version v for t (PEP 427: distribution, version, python, abi and
// platform tags, the platform tags joined with dots).
func WheelName(v string, t Target) (string, error) {
	plats, err := t.WheelPlatforms()
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%s-%s-py3-none-%s.whl", distName(), v, strings.Join(plats, ".")), nil
}

// distName is Project normalised for file names (PEP 427: runs of -_. become _).
func distName() string { return strings.ReplaceAll(Project, "-", "_") }
