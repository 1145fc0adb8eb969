package conformance

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// countingPyenv lays out a pyenv root whose one version, 3.99.0, is the real interpreter behind a wrapper
// that logs every start (what it was started for) before it runs Python under its own name (so that the
// wrapper is what the kit chooses and every later start goes through it too): the entry-point listing
// waits, for a bounded time, for a fork server to have started and logs whether one had. The pyenv command
// logs each run. It returns the shim, the start log and the pyenv log.
func countingPyenv(t *testing.T, proj string) (shim, starts, pyenvLog string) {
	t.Helper()
	out, err := exec.Command("python3", "-c", "import sys; print(sys.executable); print(sys.prefix)").Output()
	if err != nil {
		t.Skip("no python3")
	}
	lines := strings.Fields(string(out))
	real, prefix := lines[0], lines[1]
	root := filepath.Join(t.TempDir(), "pyenv")
	version := filepath.Join(root, "versions", "3.99.0")
	starts, pyenvLog = filepath.Join(root, "starts.log"), filepath.Join(root, "pyenv.log")
	marker := filepath.Join(root, "fork-server-started")
	for _, d := range []string{"shims", "libexec", "versions/3.99.0/bin"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(prefix, "lib"), filepath.Join(version, "lib")); err != nil {
		t.Fatal(err)
	}
	wrapper := fmt.Sprintf(`#!/bin/bash
case "$*" in
*_harness/__main__.py*) echo fork-server >> %[1]s; touch %[2]s ;;
*ASTRABOX-PROBE*) echo probe >> %[1]s ;;
*ASTRABOX-ENTRY-POINTS*)
  for i in $(seq 100); do [ -e %[2]s ] && break; sleep 0.1; done
  if [ -e %[2]s ]; then echo entry-points-beside-a-fork-server >> %[1]s; else echo entry-points-alone >> %[1]s; fi ;;
*) echo other >> %[1]s ;;
esac
exec -a "$0" %[3]s "$@"
`, starts, marker, real)
	if err := os.WriteFile(filepath.Join(version, "bin", "python3"), []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	command := filepath.Join(root, "libexec", "pyenv")
	if err := os.WriteFile(command, []byte(fmt.Sprintf("#!/bin/sh\necho run >> %s\nprog=$2\nshift 2\nexec %s/bin/\"$prog\" \"$@\"\n", pyenvLog, version)), 0o755); err != nil {
		t.Fatal(err)
	}
	shim = filepath.Join(root, "shims", "python3")
	text := fmt.Sprintf("#!/usr/bin/env bash\nset -e\n[ -n \"$PYENV_DEBUG\" ] && set -x\n\nprogram=\"${0##*/}\"\n\nexport PYENV_ROOT=\"%s\"\nSHIM_PATH=${0%%/*}\nif [[ $SHIM_PATH != \"%s/shims\" ]]; then\n  export _PYENV_SHIM_PATH=\"$SHIM_PATH\"\nfi\nexec \"%s\" exec \"$program\" \"$@\"\n", root, root, command)
	if err := os.WriteFile(shim, []byte(text), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(proj, ".python-version"), []byte("3.99.0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return shim, starts, pyenvLog
}

func logLines(path string) []string {
	data, _ := os.ReadFile(path)
	lines := strings.Fields(string(data))
	sort.Strings(lines)
	return lines
}

// TestOpenInterpreterStarts counts the interpreter starts of opening a run through a pyenv shim: the shim
// is never run (its interpreter is told from pyenv's files), the interpreter is started once to be probed,
// once to list the installed entry points and once per fork server (three), and the listing runs beside the
// fork servers' starts instead of before them.
func TestOpenInterpreterStarts(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python")
	}
	for _, k := range []string{"PYENV_VERSION", "PYENV_DIR", "PYENV_HOOK_PATH"} {
		t.Setenv(k, "")
	}
	proj := filepath.Join(t.TempDir(), "minimal")
	if err := os.CopyFS(proj, os.DirFS(filepath.Join("..", "..", "testdata", "providers", "correct", "minimal"))); err != nil {
		t.Fatal(err)
	}
	shim, starts, pyenvLog := countingPyenv(t, proj)
	l, err := Open(context.Background(), Options{Project: proj, Python: shim, Getenv: pathOnly})
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	if runs := logLines(pyenvLog); len(runs) != 0 {
		t.Errorf("pyenv ran %d times, want 0 (the shim's interpreter is known from pyenv's files)", len(runs))
	}
	want := []string{"entry-points-beside-a-fork-server", "fork-server", "fork-server", "fork-server", "probe"}
	if got := logLines(starts); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("interpreter starts %q, want %q", got, want)
	}
}

// TestInOrderStartsByIndex checks RunAll's dispatch: at most n runs at a time, handed out in index order,
// the next one only when a run has returned (so the default suite's longest scenario is always in the first
// wave, whatever goroutine the scheduler wakes first).
func TestInOrderStartsByIndex(t *testing.T) {
	const count = 4
	started := make(chan int, count)
	release := make([]chan struct{}, count)
	for i := range release {
		release[i] = make(chan struct{})
	}
	done := make(chan struct{})
	go func() {
		inOrder(2, count, func(k, i int) {
			if i < 2 && k != i {
				t.Errorf("run %d started on goroutine %d, want %d (the first wave is index k on goroutine k)", i, k, i)
			}
			started <- i
			<-release[i]
		})
		close(done)
	}()
	first := map[int]bool{<-started: true, <-started: true}
	if !first[0] || !first[1] {
		t.Fatalf("first wave %v, want 0 and 1", first)
	}
	select {
	case i := <-started:
		t.Fatalf("run %d started while two were running", i)
	default:
	}
	close(release[1])
	if i := <-started; i != 2 {
		t.Fatalf("after run 1 returned, run %d started, want 2", i)
	}
	close(release[0])
	if i := <-started; i != 3 {
		t.Fatalf("after run 0 returned, run %d started, want 3", i)
	}
	close(release[2])
	close(release[3])
	<-done
}
