package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/astrabox-dev/astrabox/internal/proclimit"
	"github.com/astrabox-dev/astrabox/internal/testutil/asuser"
)

// TestLowProcessLimit runs the kit as the user nobody (it needs root) under a process limit a little above what
// the user has in use, too low for a run: the kit refuses with exit 2 and a message that says what to do,
// never the Go runtime's abort (`pthread_create failed`), and leaves no process behind.
func TestLowProcessLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the kit and starts Python (skipped under -short)")
	}
	asuser.Require(t, "the kit runs as nobody, where the process limit applies")
	dir := asuser.Dir(t, "lowlimit-")
	bin := filepath.Join(dir, "astrabox")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	project, err := filepath.Abs(filepath.Join("..", "..", "examples", "providers", "reference"))
	if err != nil {
		t.Fatal(err)
	}
	copyTree(t, project, filepath.Join(dir, "reference"))
	home := filepath.Join(dir, "home")
	if err := os.Mkdir(home, 0o755); err != nil {
		t.Fatal(err)
	}
	asuser.Chown(t, dir)
	limit := tasksOfNobody() + 20
	cmd := asuser.Command("bash", "-c", "ulimit -u "+strconv.FormatUint(limit, 10)+
		" && exec ./astrabox conformance run --project reference")
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "TMPDIR=" + dir}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	code := -1
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err == nil {
		code = 0
	}
	text := out.String()
	if code != 2 || !strings.Contains(text, "ulimit -u") || !strings.Contains(text, "raise the limit") {
		t.Fatalf("under ulimit -u %d: exit %d, want 2 with the limit explained:\n%s", limit, code, text)
	}
	for _, crash := range []string{"pthread_create", "SIGABRT", "goroutine ", "panic:"} {
		if strings.Contains(text, crash) {
			t.Fatalf("the kit crashed (%q) instead of refusing:\n%s", crash, text)
		}
	}
	for i := 0; ; i++ {
		left := pidsOfNobody()
		if len(left) == 0 {
			break
		}
		if i == 250 {
			t.Fatalf("processes of nobody left after the kit ended: %v", left)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// tasksOfNobody is how many tasks the user nobody has now, measured as that user would.
func tasksOfNobody() uint64 {
	var n uint64
	for _, pid := range pidsOfNobody() {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "Threads:"); ok {
				k, _ := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
				n += k
			}
		}
	}
	return n + proclimit.Floor // bash and the kit's own first threads
}

// pidsOfNobody lists the live processes whose real user is nobody.
func pidsOfNobody() []int {
	names, _ := filepath.Glob("/proc/[0-9]*/status")
	var out []int
	for _, name := range names {
		b, err := os.ReadFile(name)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "Uid:"); ok {
				if f := strings.Fields(v); len(f) > 0 && f[0] == strconv.Itoa(asuser.UID) && !strings.Contains(string(b), "State:\tZ") {
					pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(name)))
					out = append(out, pid)
				}
			}
		}
	}
	return out
}

// copyTree copies the regular files and directories below src to dst.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.Walk(src, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		switch {
		case info.IsDir():
			return os.MkdirAll(target, 0o755)
		case info.Mode().IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(target, data, 0o644)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
