package harness

import (
	"os"
	"strconv"
	"syscall"
)

// closeInheritedOnExec marks every descriptor above standard error that this process holds close-on-exec.
// Go opens its own descriptors close-on-exec, but those the kit inherited from whatever started it (a CI
// runner's pipe, make's jobserver, a shell's redirection) are not, and every process the kit starts (wardens,
// fork servers, harnesses, and so the provider) would inherit them: a provider that writes to or closes an
// unknown descriptor would reach a pipe the kit does not own. The harness's own pipes are passed explicitly
// (exec.Cmd's ExtraFiles, made inheritable in the child only). Called once, when the package starts.
func closeInheritedOnExec() {
	d, err := os.Open("/proc/self/fd")
	if err != nil {
		return
	}
	names, _ := d.Readdirnames(-1)
	own := int(d.Fd())
	d.Close()
	for _, n := range names {
		fd, err := strconv.Atoi(n)
		if err != nil || fd <= 2 || fd == own {
			continue
		}
		syscall.CloseOnExec(fd)
	}
}
