package harness

import (
	"bytes"
	"os"
	"strconv"
)

// statBoundsResident is true: stat's resident size of a process bounds what residentBytes counts for it.
const statBoundsResident = true

// residentBytes is what one process of a replica's tree counts against the memory limit: its proportional
// set size (Pss in /proc/PID/smaps_rollup: each shared page divided among the processes that share it), so
// that a provider that forks copies of itself is charged for the memory the copies really add, not for the
// parent's pages once per child. Where smaps_rollup cannot be read (kernels before 4.14, another user's
// process), it is the resident size from stat, rssPages pages.
func residentBytes(pid int, rssPages int64) uint64 {
	if pss, ok := readPss(pid); ok {
		return pss
	}
	return uint64(rssPages) * uint64(os.Getpagesize())
}

// readPss returns the Pss line of /proc/PID/smaps_rollup, in bytes.
func readPss(pid int) (uint64, bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/smaps_rollup")
	if err != nil {
		return 0, false
	}
	i := bytes.Index(data, []byte("\nPss:"))
	if i < 0 {
		return 0, false
	}
	f := bytes.Fields(data[i+len("\nPss:"):])
	if len(f) < 2 || string(f[1]) != "kB" {
		return 0, false
	}
	kb, err := strconv.ParseUint(string(f[0]), 10, 64)
	if err != nil {
		return 0, false
	}
	return kb << 10, true
}

// residentTotal adds up what each process counts against the memory limit (see residentBytes); pages holds
// each process's resident pages from stat.
func residentTotal(pages map[int]int64) uint64 {
	var total uint64
	for pid, n := range pages {
		total += residentBytes(pid, n)
	}
	return total
}
