//go:build linux

package simulate

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// setIdle puts every thread of process pid in the SCHED_IDLE class (idle true), which runs only on a CPU
// that nothing else wants, or back in the normal class at nice 0 (idle false). A thread that the process
// starts while the threads are walked takes its creator's class, so the walk repeats until a pass changes
// nothing (at most a few passes).
func setIdle(pid int, idle bool) error {
	want := uint32(unix.SCHED_NORMAL)
	if idle {
		want = unix.SCHED_IDLE
	}
	for range 4 {
		tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
		if err != nil {
			return fmt.Errorf("list the threads of process %d: %w", pid, err)
		}
		changed := false
		for _, t := range tasks {
			tid, err := strconv.Atoi(t.Name())
			if err != nil {
				continue
			}
			if attr, err := unix.SchedGetAttr(tid, 0); err == nil && attr.Policy == want && attr.Nice == 0 {
				continue
			}
			if err := unix.SchedSetAttr(tid, &unix.SchedAttr{Policy: want}, 0); err != nil && !errors.Is(err, unix.ESRCH) {
				return fmt.Errorf("set the scheduling class of thread %d of process %d: %w", tid, pid, err)
			}
			changed = true
		}
		if !changed {
			return nil
		}
	}
	return nil
}

// setTreeNormal moves process pid and every process below it back to the normal class (setIdle false). A
// provider that started a process while its replica loaded in the idle class left it there (a child takes
// its creator's class), and a sidecar kept idle would run only when the machine has nothing else to do, so
// its timing would follow the load. The process itself is moved first, so that nothing it starts from then on
// is idle; then each child listed in /proc/<pid>/task/<tid>/children, and theirs. A descendant that has
// already left the tree (re-parented above it) is not found; one that ended meanwhile is skipped.
func setTreeNormal(pid int) error {
	if err := setIdle(pid, false); err != nil {
		return err
	}
	var errs []error
	for _, child := range childrenOf(pid) {
		if err := setTreeNormal(child); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// childrenOf lists the children of process pid, from each of its threads' children file (empty when the
// process has ended or the kernel keeps no such file).
func childrenOf(pid int) []int {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return nil
	}
	var out []int
	for _, t := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", pid, t.Name()))
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if c, err := strconv.Atoi(f); err == nil {
				out = append(out, c)
			}
		}
	}
	return out
}

// canLeaveIdle tells, once, whether this process may move a thread out of SCHED_IDLE again (CAP_SYS_NICE,
// or an RLIMIT_NICE that allows nice 0): it tries on a thread of its own, which it then lets end, so that a
// thread stuck in the idle class never runs Go code again.
var canLeaveIdle = sync.OnceValue(func() bool {
	ok := make(chan bool, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
		tid := unix.Gettid()
		if unix.SchedSetAttr(tid, &unix.SchedAttr{Policy: unix.SCHED_IDLE}, 0) != nil {
			ok <- false
			return
		}
		ok <- unix.SchedSetAttr(tid, &unix.SchedAttr{Policy: unix.SCHED_NORMAL}, 0) == nil
	}()
	return <-ok
})
