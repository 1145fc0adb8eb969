package harness

import (
	"errors"
	"syscall"
)

// errNoForkServer is why macOS runs every harness under a warden: CPython on macOS is not safe to fork once
// it has loaded system frameworks (the Objective-C runtime aborts a child that initialises a class the parent
// was initialising; a provider's import of anything that touches them, ssl, proxies or keychain lookups in
// urllib among them, may do so), and the fork server's supervisors need a subreaper macOS does not have.
var errNoForkServer = errors.New("the fork server is not used on macOS (forking a CPython that loaded system " +
	"frameworks is not safe there); every replica starts its own interpreter")

// forkServerSupported refuses the fork server on macOS (see errNoForkServer).
func forkServerSupported() error { return errNoForkServer }

// zygoteSocketpair is the fork server's socket (never opened on macOS: see forkServerSupported).
func zygoteSocketpair() ([2]int, error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_SEQPACKET, 0)
	if err == nil {
		syscall.CloseOnExec(fds[0])
		syscall.CloseOnExec(fds[1])
	}
	return fds, err
}

// zygoteAttr starts the fork server in its own session (never on macOS: see forkServerSupported).
func zygoteAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: true}
}
