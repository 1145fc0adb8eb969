package harness

import (
	"os/exec"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// sZombie is a zombie's p_stat on macOS (SZOMB in sys/proc.h).
const sZombie = 5

// procInfo is what the kernel's process listing (sysctl kern.proc) tells about one process. macOS lists no
// resident size there: rssPages is 0 and the memory poll measures the tree with ps (see residentTotal).
type procInfo struct {
	pid, ppid, pgrp int
	rssPages        int64
	start           uint64 // microseconds since the epoch
	state           byte   // 'Z' for a zombie, else 'R'
}

func infoOf(k *unix.KinfoProc) procInfo {
	p := procInfo{pid: int(k.Proc.P_pid), ppid: int(k.Eproc.Ppid), pgrp: int(k.Eproc.Pgid), state: 'R'}
	if k.Proc.P_stat == sZombie {
		p.state = 'Z'
	}
	p.start = uint64(k.Proc.P_starttime.Sec)*1e6 + uint64(k.Proc.P_starttime.Usec)
	return p
}

// readStat reads one process from sysctl kern.proc.pid.
func readStat(pid int) (procInfo, bool) {
	k, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	if err != nil || k == nil || int(k.Proc.P_pid) != pid {
		return procInfo{}, false
	}
	return infoOf(k), true
}

// allPids lists every process (sysctl kern.proc.all).
func allPids() []int {
	all, err := unix.SysctlKinfoProcSlice("kern.proc.all")
	if err != nil {
		return nil
	}
	pids := make([]int, 0, len(all))
	for i := range all {
		pids = append(pids, int(all[i].Proc.P_pid))
	}
	return pids
}

// environOf returns the environment block of pid (NUL-separated) from sysctl kern.procargs2, readable for
// the user's own processes.
func environOf(pid int) ([]byte, bool) {
	buf, err := unix.SysctlRaw("kern.procargs2", pid)
	if err != nil {
		return nil, false
	}
	return procargsEnv(buf)
}

// treeBelow is not available on macOS (no children files): callers read the whole listing instead.
func treeBelow(int) ([]int, bool) { return nil, false }

// statBoundsResident is false: the listing's resident pages are not read here, residentTotal asks ps.
const statBoundsResident = false

// residentTotal measures the resident size of the given processes with one ps run (macOS gives another
// process's resident size only through proc_pidinfo, which needs cgo). A process ps does not list has ended.
func residentTotal(pages map[int]int64) uint64 {
	if len(pages) == 0 {
		return 0
	}
	pids := make([]string, 0, len(pages))
	for pid := range pages {
		pids = append(pids, strconv.Itoa(pid))
	}
	sort.Strings(pids)
	out, _ := exec.Command("/bin/ps", "-o", "pid=,rss=", "-p", strings.Join(pids, ",")).Output()
	var total uint64
	for _, b := range parsePsRSS(out) {
		total += b
	}
	return total
}
