// Command dist writes the kit's release files into a directory (`make dist`): for every released platform
// (package release) the binary, built with CGO_ENABLED=0 and -trimpath, in a tar.gz archive and in a
// platform wheel of astrabox-kit, and checksums.txt with the SHA-256 of each archive and wheel. Run it from
// the repository root: go run ./internal/tools/dist -version 1.2.3 [-out dist] [-targets linux/amd64,...].
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/astrabox-dev/astrabox/internal/release"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "dist: "+err.Error())
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("dist", flag.ContinueOnError)
	version := fs.String("version", "", "release version (PEP 440 subset: 1.2.3, 1.2.3rc1, 1.2.3.dev4), without a leading v")
	out := fs.String("out", "dist", "directory to write the release files into (emptied of earlier release files first)")
	only := fs.String("targets", "", "comma-separated GOOS/GOARCH pairs to release (default: every released platform)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *version == "" {
		return errors.New("-version is required (for example -version 0.4.0, or make dist VERSION=0.4.0)")
	}
	if err := release.CheckVersion(*version); err != nil {
		return err
	}
	targets, err := pickTargets(*only)
	if err != nil {
		return err
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		return fmt.Errorf("run from the repository root: %w", err)
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "astrabox-dist-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	info := release.WheelInfo{
		Summary:     "Conformance kit and simulator for astrabox runtime preparation providers",
		Description: string(readme),
		HomePage:    "https://github.com/astrabox-dev/astrabox",
	}
	written := map[string][]byte{}
	for _, t := range targets {
		bin := filepath.Join(tmp, "astrabox-"+t.String())
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", bin, "./cmd/astrabox")
		cmd.Env = append(os.Environ(), "GOOS="+t.GOOS, "GOARCH="+t.GOARCH, "CGO_ENABLED=0")
		if b, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("build %s: %w\n%s", t, err, b)
		}
		binary, err := os.ReadFile(bin)
		if err != nil {
			return err
		}
		var archive bytes.Buffer
		if err := release.WriteArchive(&archive, *version, t, binary, []release.File{{Name: "README.md", Data: readme}}); err != nil {
			return err
		}
		written[release.ArchiveName(*version, t)] = archive.Bytes()
		var wheel bytes.Buffer
		if err := release.WriteWheel(&wheel, *version, t, binary, info); err != nil {
			return err
		}
		name, err := release.WheelName(*version, t)
		if err != nil {
			return err
		}
		written[name] = wheel.Bytes()
	}
	for name, data := range written {
		if err := os.WriteFile(filepath.Join(*out, name), data, 0o644); err != nil {
			return err
		}
		fmt.Println(filepath.Join(*out, name))
	}
	if err := os.WriteFile(filepath.Join(*out, release.ChecksumsName), release.Checksums(written), 0o644); err != nil {
		return err
	}
	fmt.Println(filepath.Join(*out, release.ChecksumsName))
	return nil
}

// pickTargets reads -targets (GOOS/GOARCH,...) against the released platforms.
func pickTargets(only string) ([]release.Target, error) {
	if only == "" {
		return release.Targets, nil
	}
	var out []release.Target
	for _, s := range strings.Split(only, ",") {
		found := false
		for _, t := range release.Targets {
			if s == t.GOOS+"/"+t.GOARCH {
				out = append(out, t)
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("-targets: %q is not a released platform (want linux or darwin / amd64 or arm64)", s)
		}
	}
	return out, nil
}
