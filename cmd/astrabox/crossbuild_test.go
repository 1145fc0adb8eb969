package main

import (
	"debug/macho"
	"debug/pe"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/astrabox-dev/astrabox/internal/testutil"
)

// crossTargets are the platforms the kit is built for: Linux and macOS on both architectures (the release
// archives and wheels) and Windows, whose build only says to use WSL (main_windows.go).
var crossTargets = []struct{ goos, goarch string }{
	{"linux", "amd64"}, {"linux", "arm64"}, {"darwin", "amd64"}, {"darwin", "arm64"}, {"windows", "amd64"},
}

// crossSample are the targets `make test` builds: one per operating system not built already. The kit has
// no architecture-specific source (no _amd64/_arm64 files or build tags), so a second architecture of the
// same system compiles the same code, and this package's test binary is the native Linux build; the long
// lane builds every target.
var crossSample = map[string]bool{"darwin-arm64": true, "windows-amd64": true}

// TestCrossCompile builds the kit for every target (`make test`: crossSample): these machines are Linux only, so this is how the macOS
// and Windows code is kept compiling (docs/platforms.md says what could not be run). The macOS binaries must
// be Mach-O executables of the right architecture, the Windows one a PE executable.
func TestCrossCompile(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the kit five times (skipped under -short)")
	}
	dir := t.TempDir()
	for _, tg := range crossTargets {
		t.Run(tg.goos+"-"+tg.goarch, func(t *testing.T) {
			if !crossSample[tg.goos+"-"+tg.goarch] {
				testutil.LongLane(t, "a build of every release target")
			}
			out := filepath.Join(dir, "astrabox-"+tg.goos+"-"+tg.goarch)
			cmd := exec.Command("go", "build", "-trimpath", "-o", out, ".")
			cmd.Env = append(os.Environ(), "GOOS="+tg.goos, "GOARCH="+tg.goarch, "CGO_ENABLED=0")
			if b, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("GOOS=%s GOARCH=%s go build: %v\n%s", tg.goos, tg.goarch, err, b)
			}
			switch tg.goos {
			case "darwin":
				f, err := macho.Open(out)
				if err != nil {
					t.Fatalf("not a Mach-O file: %v", err)
				}
				defer f.Close()
				want := map[string]macho.Cpu{"amd64": macho.CpuAmd64, "arm64": macho.CpuArm64}[tg.goarch]
				if f.Cpu != want || f.Type != macho.TypeExec {
					t.Fatalf("Mach-O cpu %v type %v, want %v executable", f.Cpu, f.Type, want)
				}
			case "windows":
				f, err := pe.Open(out)
				if err != nil {
					t.Fatalf("not a PE file: %v", err)
				}
				f.Close()
			}
		})
	}
}
