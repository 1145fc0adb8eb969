package wrapper

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"

	"github.com/astrabox-dev/astrabox/internal/warden"
)

// goneBound bounds the wait, after the wrapper exited or was killed, for everything it started to be killed
// and reaped.
const goneBound = 10 * time.Second

// runResult is how one run of the wrapper ended.
type runResult struct {
	exitCode    int // -1 when killed by a signal or unknown
	timedOut    bool
	leftRunning bool
}

// run runs the wrapper under a warden (package warden) in its own session, so that nothing it starts can
// outlive the run: a background child, one that called setsid, or one that double-forked. Output is copied
// into stdout and stderr; every wait is bounded.
func run(ctx context.Context, wrapper string, args []string, dir string, env []string, stdout, stderr io.Writer, timeout time.Duration) (*runResult, error) {
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("create pipe: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return nil, fmt.Errorf("create pipe: %w", err)
	}
	defer outR.Close()
	defer errR.Close()
	c, err := warden.Start(warden.Spec{Path: wrapper, Args: append([]string{wrapper}, args...), Dir: dir, Env: env, Stdout: outW, Stderr: errW})
	outW.Close()
	errW.Close()
	if err != nil {
		if errors.Is(err, syscall.EAGAIN) {
			return nil, fmt.Errorf("run the wrapper: the limit on processes for this user is reached (ulimit -u): %w", err)
		}
		return nil, &UnusableError{Path: wrapper, Reason: "cannot be started: " + err.Error() + " (does it start with a #! line?)", Err: err}
	}
	copied := make(chan struct{}, 2)
	for _, pair := range []struct {
		w io.Writer
		r *os.File
	}{{stdout, outR}, {stderr, errR}} {
		go func() { _, _ = io.Copy(pair.w, pair.r); copied <- struct{}{} }()
	}
	res := &runResult{exitCode: -1}
	t := time.NewTimer(timeout)
	defer t.Stop()
	var e warden.Exit
	select {
	case e = <-c.Exit:
	case <-t.C:
		res.timedOut = true
		_ = syscall.Kill(-c.PID, syscall.SIGKILL)
		e = <-c.Exit
	case <-ctx.Done():
		_ = syscall.Kill(-c.PID, syscall.SIGKILL)
		e = <-c.Exit
	}
	select {
	case <-c.Gone:
	case <-time.After(goneBound):
		_ = syscall.Kill(c.Warden, syscall.SIGKILL)
		<-c.Gone
	}
	res.leftRunning = c.Left() > 0
	if e.Known && e.Status.Exited() {
		res.exitCode = e.Status.ExitStatus()
	}
	// Everything that held the pipes is gone: the copies end at EOF. Bounded all the same: past the bound,
	// closing our ends ends them.
	bound := time.NewTimer(waitDelay)
	defer bound.Stop()
	for n := 0; n < 2; n++ {
		select {
		case <-copied:
		case <-bound.C:
			outR.Close()
			errR.Close()
			<-copied
		}
	}
	return res, nil
}
