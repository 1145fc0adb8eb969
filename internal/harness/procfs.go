package harness

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
)

// procInfo is what /proc/<pid>/stat tells about one process.
type procInfo struct {
	pid, ppid, pgrp int
	rssPages        int64
	start           uint64 // start time, in clock ticks after boot
	state           byte
}

// readStat parses /proc/<pid>/stat.
func readStat(pid int) (procInfo, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procInfo{}, false
	}
	// The command name is in parentheses and may hold anything.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return procInfo{}, false
	}
	f := bytes.Fields(b[i+2:])
	// f[0] is field 3 (state); field n is f[n-3].
	if len(f) < 22 {
		return procInfo{}, false
	}
	p := procInfo{pid: pid, state: f[0][0]}
	p.ppid, _ = strconv.Atoi(string(f[1]))
	p.pgrp, _ = strconv.Atoi(string(f[2]))
	p.start, _ = strconv.ParseUint(string(f[19]), 10, 64)
	p.rssPages, _ = strconv.ParseInt(string(f[21]), 10, 64)
	return p, true
}

// allPids lists the numeric entries of /proc.
func allPids() []int {
	d, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	defer d.Close()
	names, _ := d.Readdirnames(-1)
	pids := make([]int, 0, len(names))
	for _, n := range names {
		if pid, err := strconv.Atoi(n); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// treeRSS returns the resident bytes of root, the members of its process
// group and all their descendants.
func treeRSS(root int) uint64 {
	infos := map[int]procInfo{}
	children := map[int][]int{}
	for _, pid := range allPids() {
		p, ok := readStat(pid)
		if !ok || p.state == 'Z' {
			continue
		}
		infos[pid] = p
		children[p.ppid] = append(children[p.ppid], pid)
	}
	seen := map[int]bool{}
	var stack []int
	for pid, p := range infos {
		if pid == root || p.pgrp == root {
			stack = append(stack, pid)
		}
	}
	var pages int64
	for len(stack) > 0 {
		pid := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[pid] {
			continue
		}
		seen[pid] = true
		pages += infos[pid].rssPages
		stack = append(stack, children[pid]...)
	}
	return uint64(pages) * uint64(os.Getpagesize())
}

// strays returns, in one pass over /proc, the live members of process group pgid and the live processes
// whose environment holds ASTRABOX_REPLICA_TOKEN=token (other than this one). A process that started before
// notBefore (clock ticks after boot: the replica's own start) cannot descend from the replica, so its
// environment is not read: most of the machine's processes cost one stat read, not two reads.
func strays(pgid int, token string, notBefore uint64) []int {
	needle := []byte("ASTRABOX_REPLICA_TOKEN=" + token + "\x00")
	self := os.Getpid()
	var out []int
	for _, pid := range allPids() {
		if pid == self {
			continue
		}
		p, ok := readStat(pid)
		if !ok || p.state == 'Z' {
			continue
		}
		if p.pgrp == pgid {
			out = append(out, pid)
			continue
		}
		if p.start < notBefore {
			continue
		}
		if b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ"); err == nil && bytes.Contains(append(b, 0), needle) {
			out = append(out, pid)
		}
	}
	return out
}

// killGroup sends sig to process group pgid, ignoring a missing group.
func killGroup(pgid int, sig syscall.Signal) {
	if pgid > 0 {
		_ = syscall.Kill(-pgid, sig)
	}
}
