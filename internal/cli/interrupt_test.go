package cli

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// stuckRunEnv makes the test binary play a run whose cleanup never ends (TestInterruptEndsAStuckRun).
const stuckRunEnv = "ASTRABOX_TEST_STUCK_RUN"

func init() {
	if os.Getenv(stuckRunEnv) != "1" {
		return
	}
	// A run that, once interrupted, waits for something that never comes (as a double once waited for a
	// service's handler that never returned).
	ctx, cancel := signalContext(context.Background())
	defer cancel()
	os.Stdout.WriteString("ready\n")
	<-ctx.Done()
	time.Sleep(time.Hour)
	os.Exit(0)
}

// TestInterruptEndsAStuckRun: SIGTERM (and SIGINT) end the kit within interruptGrace even when the run's
// cleanup is stuck, with exit code 2 and a message that says so.
func TestInterruptEndsAStuckRun(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			exe, err := os.Executable()
			if err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(exe, "-test.run=^$")
			cmd.Env = append(os.Environ(), stuckRunEnv+"=1")
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = cmd.Process.Kill() }()
			if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "ready\n" {
				t.Fatalf("helper: %q %v", line, err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			_ = cmd.Process.Signal(sig)
			// A generous ceiling: the bound itself is interruptGrace.
			select {
			case err = <-exited:
			case <-time.After(30 * time.Second):
				t.Fatalf("the kit still runs 30s after %v", sig)
			}
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != ExitUndecided {
				t.Fatalf("exit = %v, want code %d", err, ExitUndecided)
			}
			if !strings.Contains(stderr.String(), "did not stop within its bound") {
				t.Errorf("stderr = %q", stderr.String())
			}
		})
	}
}
