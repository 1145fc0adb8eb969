//go:build !unix

package wrapper

import (
	"os"
	"os/exec"
)

// setGroup does nothing where process groups do not exist.
func setGroup(cmd *exec.Cmd) {}

// killGroup kills the wrapper process itself where process groups do not exist.
func killGroup(pid int) {
	if p, err := os.FindProcess(pid); err == nil {
		_ = p.Kill()
	}
}

// groupAlive cannot tell where process groups do not exist.
func groupAlive(pid int) bool { return false }
