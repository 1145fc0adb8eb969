package harness

import "syscall"

// forkServerSupported is nil on Linux, where the fork server runs.
func forkServerSupported() error { return nil }

// zygoteSocketpair is the fork server's socket: datagrams with descriptors, closed on exec.
func zygoteSocketpair() ([2]int, error) {
	return syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_SEQPACKET|syscall.SOCK_CLOEXEC, 0)
}

// zygoteAttr starts the fork server in its own session, dying with the kit: its parent-death signal is SIGTERM,
// on which it kills every replica's tree before it exits (its harnesses' own parent-death signal would leave
// what they started behind).
func zygoteAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGTERM}
}
