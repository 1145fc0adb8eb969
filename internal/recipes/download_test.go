package recipes

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestActionDownloadsTheRelease runs the action's install with a release version against a local release
// (file:// URL; these machines have no GitHub) made by `make dist` for this machine: it downloads the
// archive for the runner's OS and architecture, verifies it against checksums.txt, and puts the binary on
// PATH without setting up Go. A checksums file that disagrees fails the step and installs nothing.
func TestActionDownloadsTheRelease(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the kit (skipped under -short)")
	}
	if runtime.GOOS != "linux" {
		t.Skip("the test runner plays a Linux runner")
	}
	needTools(t, "go", "curl", "tar")
	const version = "0.0.1"
	releases := t.TempDir()
	dist := filepath.Join(releases, "v"+version)
	cmd := exec.Command("go", "run", "./internal/tools/dist", "-version", version, "-targets", "linux/"+runtime.GOARCH, "-out", dist)
	cmd.Dir = repoRoot(t)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make dist: %v\n%s", err, out)
	}
	inputs := map[string]string{"version": "v" + version, "release-url": "file://" + releases, "install-only": "true"}
	r, _ := startAction(t, inputs)
	if r.failed {
		t.Fatalf("the install failed:\n%s", r.logs.String())
	}
	if _, ok := r.uses["actions/setup-go"]; ok {
		t.Error("Go was set up for a release download")
	}
	bin := r.actionOutputs()["astrabox"]
	if bin != filepath.Join(r.temp, "astrabox-bin", "astrabox") || !contains(r.addPaths, filepath.Dir(bin)) {
		t.Fatalf("astrabox installed at %q, PATH gained %v", bin, r.addPaths)
	}
	if out, err := exec.Command(bin, "--version").CombinedOutput(); err != nil || !strings.Contains(string(out), "astrabox") {
		t.Fatalf("the installed binary: %v %s", err, out)
	}
	if !strings.Contains(r.logs.String(), "Downloading file://"+releases) {
		t.Errorf("the log does not show the download:\n%s", r.logs.String())
	}

	// A checksums file that does not match the archive: the step fails, with the reason, and installs nothing.
	sums := filepath.Join(dist, "checksums.txt")
	data, err := os.ReadFile(sums)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(sums, []byte(strings.Repeat("0", 64)+string(data[64:])), 0o644); err != nil {
		t.Fatal(err)
	}
	r, _ = startAction(t, inputs)
	if !r.failed || !strings.Contains(r.logs.String(), "checksum mismatch for astrabox_"+version+"_linux_"+runtime.GOARCH+".tar.gz") {
		t.Fatalf("a tampered release was not refused:\n%s", r.logs.String())
	}
	if _, err := os.Stat(filepath.Join(r.temp, "astrabox-bin", "astrabox")); err == nil {
		t.Error("the binary of a tampered release was installed")
	}
}
