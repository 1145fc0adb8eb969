//go:build linux

package simulate

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
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
