package warden

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

func start(t *testing.T, script string) *Child {
	t.Helper()
	c, err := Start(Spec{Path: "/bin/sh", Args: []string{"sh", "-c", script}, Env: []string{"PATH=/usr/bin:/bin"}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func wait(t *testing.T, c *Child) Exit {
	t.Helper()
	select {
	case e := <-c.Exit:
		select {
		case <-c.Gone:
		case <-time.After(10 * time.Second):
			t.Fatal("the warden did not end")
		}
		return e
	case <-time.After(10 * time.Second):
		t.Fatal("no exit reported")
	}
	return Exit{}
}

func TestExitStatusAndSession(t *testing.T) {
	c := start(t, "exit 3")
	if c.PID == c.Warden || c.PID <= 0 {
		t.Fatalf("pid %d warden %d", c.PID, c.Warden)
	}
	e := wait(t, c)
	if !e.Known || !e.Status.Exited() || e.Status.ExitStatus() != 3 || c.Left() != 0 {
		t.Fatalf("exit %+v left %d", e, c.Left())
	}
}

func TestEscapedDescendantsAreKilled(t *testing.T) {
	// A double fork into a session of its own: its parent is gone, so only a subreaper still has it.
	goFile := filepath.Join(t.TempDir(), "go")
	c := start(t, "(setsid sleep 600 &); (setsid sleep 601 &); while [ ! -e "+goFile+" ]; do sleep 0.01; done; exit 0")
	below := make(chan []int, 1)
	go func() {
		for i := 0; i < 500; i++ {
			if pids := Below(c.Warden); len(pids) >= 3 {
				below <- pids
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		below <- nil
	}()
	pids := <-below
	if err := os.WriteFile(goFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	e := wait(t, c)
	if !e.Known || e.Status.ExitStatus() != 0 {
		t.Fatalf("exit %+v", e)
	}
	if len(pids) < 3 || c.Left() < 2 {
		t.Fatalf("below the warden %v, left %d: the escaped sleeps were not under it", pids, c.Left())
	}
	for _, pid := range pids {
		if st, ok := readStat(pid); ok && st.state != 'Z' {
			t.Errorf("process %d still runs", pid)
		}
	}
}

func TestStartErrors(t *testing.T) {
	_, err := Start(Spec{Path: "/nonexistent/cmd", Env: []string{}})
	if !errors.Is(err, syscall.ENOENT) {
		t.Fatalf("err %v does not wrap ENOENT", err)
	}
}
