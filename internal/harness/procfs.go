package harness

import (
	"bytes"
	"os"
	"syscall"
)

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
//
// A forked harness is its own supervisor (supervisor == pid: it is a subreaper); it is counted too.
func treeRSS(pid, supervisor int) uint64 {
	return residentTotal(treePages(pid, supervisor))
}

// treePages are the resident pages from stat of every process treeRSS counts, by pid.
func treePages(pid, supervisor int) map[int]int64 {
	if supervisor > 0 {
		if below, ok := treeBelow(supervisor); ok {
			if supervisor == pid {
				below = append(below, pid)
			}
			pages := map[int]int64{}
			for _, p := range below {
				if info, ok := readStat(p); ok && info.state != 'Z' {
					pages[p] = info.rssPages
				}
			}
			return pages
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
	pages := map[int]int64{}
	add := func(p int) {
		if info, ok := t.infos[p]; ok && (p != supervisor || p == pid) {
			pages[p] = info.rssPages
		}
	}
	for _, r := range roots {
		add(r)
	}
	for _, p := range t.below(roots...) {
		add(p)
	}
	return pages
}

// treeRSSWithin is treeRSS for a check against limit: when the tree's resident size from stat is within the
// limit, it returns that size without reading any process's proportional set size. A process's resident size
// counts each of its shared pages in full, so it is never below its proportional set size: a tree within the
// limit by stat is within it by treeRSS too, and a tree over it by stat is measured as treeRSS measures it.
// Reading smaps_rollup makes the kernel walk a process's page tables, and the memory poll of every replica
// did that four times a second (docs/performance.md, "Two jobs: what the second slot costs").
func treeRSSWithin(pid, supervisor int, limit uint64) uint64 {
	pages := treePages(pid, supervisor)
	if statBoundsResident && limit > 0 {
		var stat uint64
		for _, n := range pages {
			stat += uint64(n) * uint64(os.Getpagesize())
		}
		if stat <= limit {
			return stat
		}
	}
	return residentTotal(pages)
}

// strays returns, in one pass over the process listing, the live members of process group pgid and the live processes
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
		if b, ok := environOf(pid); ok && bytes.Contains(append(b, 0), needle) {
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
