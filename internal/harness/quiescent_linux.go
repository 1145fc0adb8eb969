package harness

import (
	"os"
	"strconv"
)

// Asleep reports whether every thread of the replica's process is asleep (blocked in the kernel, waiting
// for I/O, a timer, a lock or a condition: state S in /proc/<pid>/task/<tid>/stat), so that nothing in the
// process can make progress until something outside it answers. A thread that is running, runnable but
// waiting for a CPU (a loaded machine), or in uninterruptible I/O counts as awake. Known is false when the
// states cannot be read (the process is gone, or the platform has no /proc).
func (p *Process) Asleep() (asleep, known bool) {
	if p == nil || p.pid <= 0 {
		return false, false
	}
	return processAsleep(p.pid)
}

// processAsleep reads every thread's state of pid.
func processAsleep(pid int) (asleep, known bool) {
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	d, err := os.Open(dir)
	if err != nil {
		return false, false
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil || len(names) == 0 {
		return false, false
	}
	for _, n := range names {
		tid, err := strconv.Atoi(n)
		if err != nil {
			continue
		}
		st, ok := readTaskStat(pid, tid)
		if !ok {
			return false, false
		}
		if st != 'S' {
			return false, true
		}
	}
	return true, true
}

// readTaskStat is the state letter of one thread.
func readTaskStat(pid, tid int) (byte, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + strconv.Itoa(tid) + "/stat")
	if err != nil {
		return 0, false
	}
	info, ok := parseStat(b)
	return info.state, ok
}
