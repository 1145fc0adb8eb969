package services

import "syscall"

// fakeAttr starts a fake in its own process group, dying with the kit.
func fakeAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
