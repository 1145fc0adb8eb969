//go:build unix

package wrapper

import (
	"os/exec"
	"syscall"
)

// setGroup starts the wrapper in a process group of its own, so that everything it starts can be killed.
func setGroup(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }

// killGroup kills the wrapper's process group; a group that is already gone is fine.
func killGroup(pid int) { _ = syscall.Kill(-pid, syscall.SIGKILL) }

// groupAlive reports whether any process of the wrapper's process group is still there.
func groupAlive(pid int) bool { return syscall.Kill(-pid, 0) == nil }
