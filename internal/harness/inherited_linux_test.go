package harness

import (
	"os/exec"
	"strconv"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestInheritedDescriptorsStayWithTheKit: a descriptor that is not close-on-exec (as one the kit inherited
// is) is marked close-on-exec by closeInheritedOnExec, and a process started afterwards does not hold it;
// standard input, output and error are left as they are.
func TestInheritedDescriptorsStayWithTheKit(t *testing.T) {
	fd, err := syscall.Open("/dev/null", syscall.O_RDONLY, 0) // no O_CLOEXEC: an inherited descriptor's state
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	if flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != nil || flags&unix.FD_CLOEXEC != 0 {
		t.Fatalf("descriptor %d flags %d (%v): want it inheritable before the call", fd, flags, err)
	}
	// held tells whether a process started now holds descriptor fd (a shell's built-in test: it opens nothing).
	held := func() bool {
		return exec.Command("sh", "-c", "[ -e /proc/self/fd/"+strconv.Itoa(fd)+" ]").Run() == nil
	}
	if !held() {
		t.Fatalf("a started process does not hold the inheritable descriptor %d: the probe proves nothing", fd)
	}
	closeInheritedOnExec()
	if flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != nil || flags&unix.FD_CLOEXEC == 0 {
		t.Fatalf("descriptor %d flags %d (%v): want FD_CLOEXEC after closeInheritedOnExec", fd, flags, err)
	}
	for std := 0; std <= 2; std++ {
		if flags, err := unix.FcntlInt(uintptr(std), unix.F_GETFD, 0); err == nil && flags&unix.FD_CLOEXEC != 0 {
			t.Fatalf("standard descriptor %d was made close-on-exec", std)
		}
	}
	if held() {
		t.Fatalf("a process started after closeInheritedOnExec still holds descriptor %d", fd)
	}
}
