// Package asuser lets a test that runs as root run a process as the unprivileged user nobody, where limits
// root is exempt from apply (the process limit of `ulimit -u`, for one). It is test support only: it imports
// testing, and no package of the kit imports it outside its tests.
//
// A test either runs a command of its own as nobody (Command, in a directory from Dir that nobody may enter
// and own) or runs one of its own test functions again as nobody (Reexec, with Helper telling the
// re-executed copy apart).
package asuser

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// UID and GID are the user nobody's and its group's ids.
const (
	UID = 65534
	GID = 65534
)

// Require skips the test unless it runs as root, which running a process as another user needs; why says
// what the test checks as nobody.
func Require(t testing.TB, why string) {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skipf("needs root to run a process as the user nobody (%s)", why)
	}
}

// Dir makes a temporary directory that nobody may enter, removed when the test ends. (The default
// temporary directories of a test run as root are not always open to other users.)
func Dir(t testing.TB, prefix string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Chown gives dir and everything below it to nobody, so that a process run as nobody may write there.
func Chown(t testing.TB, dir string) {
	t.Helper()
	err := filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, UID, GID)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Command returns a command that runs as nobody.
func Command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: UID, Gid: GID}}
	return cmd
}

// Helper tells whether this process is the copy of the test binary Reexec started, by the environment
// variable Reexec set.
func Helper(envVar string) bool { return os.Getenv(envVar) == "1" }

// Reexec runs the test function named test of this test binary again as nobody, with envVar=1 in its
// environment, and returns its combined output; the test fails when the copy fails. The binary is copied to
// a directory nobody may enter first (a test binary lies in one only root may), and the copy runs there.
func Reexec(t testing.TB, test, envVar string) string {
	t.Helper()
	dir := Dir(t, "asuser-")
	bin := filepath.Join(dir, filepath.Base(os.Args[0]))
	data, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := Command(bin, "-test.run=^"+test+"$", "-test.count=1", "-test.v")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), envVar+"=1")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s as nobody: %v\n%s", test, err, out.String())
	}
	return out.String()
}
