package harness

import (
	"bufio"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// forkedCopies starts a Python process that fills 96 MiB and forks four children that keep the pages shared
// (they only sleep), and returns its pid once every child is running.
const forkedCopies = `
import os, sys, time
block = bytearray(96 << 20)
for i in range(0, len(block), 4096):
    block[i] = 1
for _ in range(4):
    if os.fork() == 0:
        time.sleep(60)
        os._exit(0)
print("ready", flush=True)
time.sleep(60)
`

// startForkedCopies starts forkedCopies and returns its pid once its four children run; the process and its
// children are killed when the test ends. It skips the test on a kernel without smaps_rollup.
func startForkedCopies(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("python3", "-c", forkedCopies)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, p := range readProcTable().below(cmd.Process.Pid) {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line, _ := bufio.NewReader(out).ReadString('\n')
	if strings.TrimSpace(line) != "ready" {
		t.Fatalf("the forking process said %q", line)
	}
	if _, ok := readPss(cmd.Process.Pid); !ok {
		t.Skip("this kernel has no /proc/PID/smaps_rollup: the resident size is all there is")
	}
	return cmd.Process.Pid
}

// TestTreeMemoryCountsSharedPagesOnce: a provider that forks copies of itself is charged for what the copies
// add. Summing each process's resident size would charge the shared 96 MiB five times (480 MiB); the
// proportional set sizes add up to about 96 MiB.
func TestTreeMemoryCountsSharedPagesOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python")
	}
	pid := startForkedCopies(t)
	if n := len(readProcTable().below(pid)); n != 4 {
		t.Fatalf("%d children, want 4", n)
	}
	got := treeRSS(pid, 0) >> 20
	if got < 96 || got > 200 {
		t.Fatalf("the tree is charged %d MiB; its one 96 MiB block is shared by five processes (their resident sizes add up to about 500 MiB)", got)
	}
}

// TestTreeBelowASupervisor: with a supervisor, the tree is read from the children files of /proc (only the
// supervisor's descendants, not every process of the machine) and gives what one pass over /proc gives: the
// harness and the four copies it forked, charged once for the block they share, the supervisor not at all.
func TestTreeBelowASupervisor(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python")
	}
	// The outer interpreter stands for the supervisor: its child (the "harness") fills and forks.
	cmd := exec.Command("python3", "-c", "import subprocess, sys; subprocess.run([sys.executable, '-c', sys.argv[1]])", forkedCopies)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	supervisor := cmd.Process.Pid
	defer func() {
		for _, p := range readProcTable().below(supervisor) {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	line, _ := bufio.NewReader(out).ReadString('\n')
	if strings.TrimSpace(line) != "ready" {
		t.Fatalf("the forking process said %q", line)
	}
	got, ok := treeBelow(supervisor)
	if !ok {
		t.Skip("this kernel has no /proc/PID/task/TID/children")
	}
	want := readProcTable().below(supervisor)
	slices.Sort(got)
	slices.Sort(want)
	if len(want) != 5 || !slices.Equal(got, want) {
		t.Fatalf("below the supervisor: children files give %v, one pass over /proc %v (want the harness and four copies)", got, want)
	}
	if _, ok := readPss(supervisor); !ok {
		return
	}
	if rss := treeRSS(want[0], supervisor) >> 20; rss < 96 || rss > 200 {
		t.Fatalf("the tree below the supervisor is charged %d MiB; its one 96 MiB block is shared by five processes", rss)
	}
	if _, ok := treeBelow(1 << 30); ok {
		t.Error("treeBelow of a pid that does not exist reported a tree")
	}
}

// TestMemoryPollDecidesAsTreeRSSWithoutPss: the memory poll's measure (treeRSSWithin) reads no proportional
// set size while the tree's resident size from stat is within the limit (it returns that size, about 500 MiB
// for the five processes sharing one 96 MiB block), and decides over or within as treeRSS does at every
// limit: within at 1 GiB and at 300 MiB (by the proportional sizes, about 96 MiB), over at 64 MiB.
func TestMemoryPollDecidesAsTreeRSSWithoutPss(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python")
	}
	pid := startForkedCopies(t)
	if got := treeRSSWithin(pid, 0, 1<<30) >> 20; got < 400 || got > 1<<10 {
		t.Errorf("within a 1 GiB limit the poll measured %d MiB, want the resident size from stat (about 500 MiB), read without smaps_rollup", got)
	}
	for _, limit := range []uint64{1 << 30, 300 << 20, 64 << 20} {
		poll, exact := treeRSSWithin(pid, 0, limit), treeRSS(pid, 0)
		if (poll > limit) != (exact > limit) {
			t.Errorf("limit %d MiB: the poll measured %d MiB and treeRSS %d MiB: they decide differently", limit>>20, poll>>20, exact>>20)
		}
		if poll > limit && poll>>20 > 200 {
			t.Errorf("limit %d MiB: over it by %d MiB from stat, not by the proportional sizes", limit>>20, poll>>20)
		}
	}
}
