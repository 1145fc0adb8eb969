package harness

import (
	"bytes"
	"errors"
	"io/fs"
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
	p, ok := parseStat(b)
	if ok {
		p.pid = pid
	}
	return p, ok
}

// parseStat parses the content of a /proc stat file (of a process or of one of its threads).
func parseStat(b []byte) (procInfo, bool) {
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
	p := procInfo{state: f[0][0]}
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

// procTable is one pass over /proc: every live (non-zombie) process and the children of each.
type procTable struct {
	infos    map[int]procInfo
	children map[int][]int
}

func readProcTable() procTable {
	t := procTable{infos: map[int]procInfo{}, children: map[int][]int{}}
	for _, pid := range allPids() {
		p, ok := readStat(pid)
		if !ok || p.state == 'Z' {
			continue
		}
		t.infos[pid] = p
		t.children[p.ppid] = append(t.children[p.ppid], pid)
	}
	return t
}

// below returns every process under the roots (not the roots themselves), each once.
func (t procTable) below(roots ...int) []int {
	seen := map[int]bool{}
	var out []int
	stack := append([]int(nil), roots...)
	for _, r := range roots {
		seen[r] = true
	}
	for len(stack) > 0 {
		pid := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, c := range t.children[pid] {
			if !seen[c] {
				seen[c] = true
				out = append(out, c)
				stack = append(stack, c)
			}
		}
	}
	return out
}

// treeRSS returns the resident bytes (proportional set sizes where the kernel gives them: see residentBytes)
// of the harness pid, the members of its process group, all their
// descendants and, when supervisor is not 0, everything below the supervisor (every descendant of the
// harness, whatever it did to its group, session or environment, since the supervisor is their subreaper).
//
// With a supervisor, the members of the harness's group are below it too (a group lives in one session, and
// the harness leads its own), so only the supervisor's tree is read, through the children files of /proc
// (see treeBelow); without them, or without a supervisor, one pass over all of /proc.
func treeRSS(pid, supervisor int) uint64 {
	if supervisor > 0 {
		if below, ok := treeBelow(supervisor); ok {
			var total uint64
			for _, p := range below {
				if info, ok := readStat(p); ok && info.state != 'Z' {
					total += residentBytes(p, info.rssPages)
				}
			}
			return total
		}
	}
	t := readProcTable()
	roots := []int{pid}
	for p, info := range t.infos {
		if info.pgrp == pid {
			roots = append(roots, p)
		}
	}
	if supervisor > 0 {
		roots = append(roots, supervisor)
	}
	counted := map[int]bool{}
	var total uint64
	add := func(p int) {
		if info, ok := t.infos[p]; ok && !counted[p] && p != supervisor {
			counted[p] = true
			total += residentBytes(p, info.rssPages)
		}
	}
	for _, r := range roots {
		add(r)
	}
	for _, p := range t.below(roots...) {
		add(p)
	}
	return total
}

// treeBelow returns the descendants of root by their parent links as the kernel lists them in
// /proc/<pid>/task/<tid>/children (each thread's children), reading only the processes of the tree instead of
// every process of the machine; ok is false when those files are not there (a kernel without
// CONFIG_PROC_CHILDREN) or root is gone. The kernel does not promise that a list read while processes start
// or end is complete, so it serves what may miss a process for one round (the memory poll, which comes again),
// never the sweep that kills strays.
func treeBelow(root int) (below []int, ok bool) {
	seen := map[int]bool{root: true}
	stack := []int{root}
	for len(stack) > 0 {
		pid := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		kids, err := childrenOf(pid)
		if err != nil {
			if pid == root {
				return nil, false
			}
			continue // it ended meanwhile
		}
		for _, c := range kids {
			if !seen[c] {
				seen[c] = true
				below = append(below, c)
				stack = append(stack, c)
			}
		}
	}
	return below, true
}

// childrenOf lists the children of every thread of pid from /proc.
func childrenOf(pid int) ([]int, error) {
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	d, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	tids, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return nil, err
	}
	var out []int
	for _, tid := range tids {
		b, err := os.ReadFile(dir + "/" + tid + "/children")
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && tid == strconv.Itoa(pid) {
				if _, serr := os.Stat(dir + "/" + tid); serr == nil {
					return nil, err // the thread is there but not its children file: no CONFIG_PROC_CHILDREN
				}
			}
			continue
		}
		for _, f := range bytes.Fields(b) {
			if c, err := strconv.Atoi(string(f)); err == nil {
				out = append(out, c)
			}
		}
	}
	return out, nil
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
