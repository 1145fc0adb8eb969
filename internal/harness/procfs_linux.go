package harness

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"strconv"
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

// environOf returns the environment block of pid (NUL-separated), from /proc/<pid>/environ.
func environOf(pid int) ([]byte, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	return b, err == nil
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
