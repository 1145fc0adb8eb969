package proclimit

import (
	"os"
	"strconv"
)

// exempt reports whether the kernel skips the limit for this process: real user root, or CAP_SYS_RESOURCE (24)
// or CAP_SYS_ADMIN (21) in the effective set.
func exempt() bool {
	if os.Getuid() == 0 {
		return true
	}
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return false
	}
	caps, ok := field(b, "CapEff:")
	if !ok {
		return false
	}
	v, err := strconv.ParseUint(caps, 16, 64)
	return err == nil && v&(1<<24|1<<21) != 0
}

// tasksOf counts the tasks (threads) of every process whose real user is uid.
func tasksOf(uid int) uint64 {
	d, err := os.Open("/proc")
	if err != nil {
		return 0
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	want := strconv.Itoa(uid)
	var n uint64
	for _, name := range names {
		if name == "" || name[0] < '0' || name[0] > '9' {
			continue
		}
		b, err := os.ReadFile("/proc/" + name + "/status")
		if err != nil {
			continue // gone meanwhile
		}
		uids, ok := field(b, "Uid:")
		if !ok || firstWord(uids) != want {
			continue
		}
		if t, ok := field(b, "Threads:"); ok {
			if v, err := strconv.ParseUint(t, 10, 64); err == nil {
				n += v
				continue
			}
		}
		n++
	}
	return n
}
