//go:build !unix

package discovery

import "os/exec"

// setProcessGroup is a no-op where process groups are not available.
func setProcessGroup(cmd *exec.Cmd) {}

// openNonBlock is not needed where named pipes cannot block an open.
const openNonBlock = 0

// executableByUs is false where there are no pyenv shims to resolve without running them.
func executableByUs(path string) bool { return false }
