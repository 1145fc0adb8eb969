//go:build unix

package discovery

import (
	"os/exec"
	"syscall"
)

// setProcessGroup runs cmd in its own process group and makes cancellation kill the whole group.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		if cmd.Process == nil {
			return nil
		}
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}

// openNonBlock makes opening a named pipe return at once instead of waiting for a writer.
const openNonBlock = syscall.O_NONBLOCK

// executableByUs tells whether this process may execute path, as bash's -x test does (access(2) with X_OK).
func executableByUs(path string) bool { return syscall.Access(path, 0x1) == nil }
