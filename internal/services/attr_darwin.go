package services

import "syscall"

// fakeAttr starts a fake in its own process group; macOS has no parent-death signal, so a fake outlives a
// kit killed by SIGKILL (the kit ends its group on every other exit).
func fakeAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
