package proclimit

import (
	"os"

	"golang.org/x/sys/unix"
)

// exempt reports whether the limit does not apply: on macOS, to the real user root only.
func exempt() bool { return os.Getuid() == 0 }

// tasksOf counts the processes whose real user is uid (macOS counts processes against the limit, not
// threads).
func tasksOf(uid int) uint64 {
	list, err := unix.SysctlKinfoProcSlice("kern.proc.ruid", uid)
	if err != nil {
		return 0
	}
	return uint64(len(list))
}
