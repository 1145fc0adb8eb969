package proclimit

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/astrabox-dev/astrabox/internal/testutil/asuser"
)

// helperVar selects the re-executed test binary's role (see TestAsUnprivilegedUser).
const helperVar = "ASTRABOX_TEST_PROCLIMIT_HELPER"

func TestFreeAndError(t *testing.T) {
	if (Room{}).Free() != ^uint64(0) {
		t.Fatal("unbounded room must have no end")
	}
	if got := (Room{Bounded: true, Limit: 30, Used: 31}).Free(); got != 0 {
		t.Fatalf("over the limit: free %d, want 0", got)
	}
	e := &Error{What: "a harness for replica r2", Room: Room{Bounded: true, Limit: 30, Used: 24}, Need: 8}
	for _, want := range []string{"cannot start a harness for replica r2", "ulimit -u 30", "room for 6 more", "24 in use", "needs 8", "raise the limit"} {
		if !strings.Contains(e.Error(), want) {
			t.Errorf("%q lacks %q", e.Error(), want)
		}
	}
	if e.ExitCode() != 2 {
		t.Fatalf("exit code %d, want 2", e.ExitCode())
	}
}

// TestTasksCountThreads: the count of the user's tasks includes every thread of this process.
func TestTasksCountThreads(t *testing.T) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	v, _ := field(b, "Threads:")
	own, _ := strconv.ParseUint(v, 10, 64)
	if own < 2 {
		t.Fatalf("this Go test has %d threads?", own)
	}
	if n := tasksOf(os.Getuid()); n < own {
		t.Fatalf("the user's tasks: %d, fewer than this process's %d threads", n, own)
	}
	if n := tasksOf(-12345); n != 0 {
		t.Fatalf("a user that does not exist has %d tasks", n)
	}
}

// TestRootIsExempt: the kernel does not apply the limit to root, so neither does Current.
func TestRootIsExempt(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("runs as root")
	}
	if r := Current(); r.Bounded {
		t.Fatalf("root's room is bounded: %+v", r)
	}
}

// TestAsUnprivilegedUser runs this test binary again as the user nobody (which needs root), where the limit
// applies: with the limit set a little above what is in use, Ensure refuses a need larger than the rest and
// accepts a smaller one; RaiseSoft lifts a soft limit to the hard one.
func TestAsUnprivilegedUser(t *testing.T) {
	if asuser.Helper(helperVar) {
		unprivileged(t)
		return
	}
	asuser.Require(t, "the process limit applies to it")
	if out := asuser.Reexec(t, "TestAsUnprivilegedUser", helperVar); !strings.Contains(out, "CHECKED") {
		t.Fatalf("the helper did not run its checks:\n%s", out)
	}
}

func unprivileged(t *testing.T) {
	r := Current()
	if !r.Bounded || r.Used == 0 {
		t.Fatalf("as nobody with a limit, the room must be bounded and in use: %+v", r)
	}
	lim := unix.Rlimit{Cur: r.Used + 6, Max: r.Used + 100}
	if err := unix.Setrlimit(unix.RLIMIT_NPROC, &lim); err != nil {
		t.Fatal(err)
	}
	err := Ensure("a test harness", 40)
	var le *Error
	if !errors.As(err, &le) || le.Need != 40 || le.Room.Limit != lim.Cur || le.Room.Free() > 6 {
		t.Fatalf("Ensure(40) with about 6 free: %v", err)
	}
	if err := Ensure("a test harness", 1); err != nil {
		t.Fatalf("Ensure(1) with about 6 free: %v", err)
	}
	RaiseSoft()
	if r := Current(); r.Limit != lim.Max {
		t.Fatalf("after RaiseSoft the limit is %d, want the hard %d", r.Limit, lim.Max)
	}
	fmt.Println("CHECKED")
}
