package conformance

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// descendants lists the live processes below pid (children, their children, ...), from /proc.
func descendants(pid int) []int {
	children := map[int][]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
		if len(f) < 2 || f[0] == "Z" {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		children[ppid] = append(children[ppid], n)
	}
	var out []int
	stack := []int{pid}
	for len(stack) > 0 {
		p := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, c := range children[p] {
			out = append(out, c)
			stack = append(stack, c)
		}
	}
	return out
}

func assertNoDescendants(t *testing.T, when string) {
	t.Helper()
	var left []int
	for i := 0; i < 100; i++ {
		if left = descendants(os.Getpid()); len(left) == 0 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Errorf("%s: processes left running: %v", when, left)
}

// TestRunLeavesNoProcess: a run, finished or interrupted, leaves no process behind: no replica, no standby,
// no fork server.
func TestRunLeavesNoProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python (skipped under -short)")
	}
	project, _ := filepath.Abs(filepath.Join("..", "..", "examples", "providers", "reference"))
	o := Options{Project: project, Python: "python3", Getenv: pathOnly}
	if _, err := Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	assertNoDescendants(t, "after a run")

	ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
	defer cancel()
	Run(ctx, o) // interrupted while its scenarios run (or before): the error is beside the point here
	assertNoDescendants(t, "after an interrupted run")
}
