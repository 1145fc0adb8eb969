package services

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/astrabox-dev/astrabox/internal/stubs"
)

// StandIn is what answers a service's requests during a run.
type StandIn interface {
	// Handler answers the service's requests.
	Handler() http.Handler
	// Reset clears the stand-in's state between scenarios.
	Reset(ctx context.Context) error
	// Alive reports a stand-in that can no longer answer (a fake that exited), with its output.
	Alive() error
	// Close stops the stand-in and everything it started.
	Close() error
}

// Start brings up the stand-in of a service: its stubs, or its fake on a free loopback port.
func Start(ctx context.Context, s Spec) (StandIn, error) { return StartInstance(ctx, s, 1) }

// StartInstance brings up one of several independent stand-ins of a service (one per scenario slot of a
// run): its own copy of the stubs' scenario state, or its own fake process on its own free loopback port,
// with its own output. Instances share nothing the kit keeps; instance numbers start at 1, and messages
// about any instance but the first name it ("service vault (instance 2)").
func StartInstance(ctx context.Context, s Spec, instance int) (StandIn, error) {
	label := "service " + s.Name
	if instance > 1 {
		label = fmt.Sprintf("service %s (instance %d)", s.Name, instance)
	}
	if s.Stubs != "" {
		set, err := stubs.Load(s.Stubs)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", label, err)
		}
		return &stubStandIn{set: set}, nil
	}
	f := &Fake{spec: s, label: label}
	if err := f.start(ctx); err != nil {
		return nil, err
	}
	return f, nil
}

type stubStandIn struct{ set *stubs.Set }

func (s *stubStandIn) Handler() http.Handler       { return s.set }
func (s *stubStandIn) Reset(context.Context) error { s.set.Reset(); return nil }
func (s *stubStandIn) Alive() error                { return nil }
func (s *stubStandIn) Close() error                { return nil }

// Fake is the author's own fake of a service, running as a child process group of the kit.
type Fake struct {
	spec  Spec
	label string // "service NAME", with the instance number after the first
	port  int

	mu   sync.Mutex
	cmd  *exec.Cmd
	out  *tail
	done chan struct{}
	err  error
}

// outputTail bounds how much of a fake's output the kit keeps for messages.
const outputTail = 16 << 10

// stopGrace is how long a fake has to exit after SIGTERM before its group is killed.
const stopGrace = 2 * time.Second

// Port is the loopback port the fake listens on.
func (f *Fake) Port() int { return f.port }

// Pid is the process id (and process group id) of the fake's command while it runs, else 0.
func (f *Fake) Pid() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cmd == nil || f.cmd.Process == nil {
		return 0
	}
	return f.cmd.Process.Pid
}

// Output is the end of what the fake printed.
func (f *Fake) Output() string {
	if f.out == nil {
		return ""
	}
	return f.out.String()
}

// portAttempts bounds how often a fake is started again on a new port when it exited before it answered
// and its port turned out to be held by another process (it lost a race for the port, see ports.go).
const portAttempts = 3

// start runs the fake on a free port and waits until it answers. A fake that exits before it answers,
// leaving its port held by someone else, lost the port between the kit's check and its own bind: it is
// started again on another port.
func (f *Fake) start(ctx context.Context) error {
	for attempt := 1; ; attempt++ {
		err := f.startOnce(ctx)
		var exited *exitedEarlyError
		if err == nil || !errors.As(err, &exited) || attempt == portAttempts || !portHeld(exited.port) {
			return err
		}
	}
}

// exitedEarlyError is a fake that exited before it answered its ready request, on port.
type exitedEarlyError struct {
	port int
	msg  string
}

func (e *exitedEarlyError) Error() string { return e.msg }

func (f *Fake) startOnce(ctx context.Context) error {
	port, err := reservePort()
	if err != nil {
		return fmt.Errorf("%s: %w", f.label, err)
	}
	f.port = port
	line := strings.ReplaceAll(f.spec.Run, "{port}", strconv.Itoa(port))
	cmd := exec.Command("/bin/sh", "-c", line)
	cmd.Dir = f.spec.Dir
	f.out = &tail{max: outputTail}
	cmd.Stdout, cmd.Stderr = f.out, f.out
	cmd.SysProcAttr = fakeAttr()
	if err := cmd.Start(); err != nil {
		releasePort(port)
		return fmt.Errorf("%s: start %q: %w", f.label, line, err)
	}
	f.mu.Lock()
	f.cmd, f.done, f.err = cmd, make(chan struct{}), nil
	f.mu.Unlock()
	done := f.done
	go func() {
		werr := cmd.Wait()
		f.mu.Lock()
		f.err = werr
		f.mu.Unlock()
		close(done)
	}()
	if err := f.waitReady(ctx); err != nil {
		f.Close()
		return err
	}
	return nil
}

// waitReady requests the ready path until any HTTP answer comes, the fake exits, or the timeout passes.
func (f *Fake) waitReady(ctx context.Context) error {
	deadline := time.Now().Add(f.spec.ReadyTimeout)
	client := &http.Client{Timeout: time.Second}
	target := fmt.Sprintf("http://127.0.0.1:%d%s", f.port, f.spec.Ready)
	for {
		select {
		case <-f.done:
			return &exitedEarlyError{port: f.port, msg: fmt.Sprintf("%s: the fake exited before it answered (%s): %v\n%s", f.label, f.spec.Run, f.exitErr(), indent(f.Output()))}
		case <-ctx.Done():
			return fmt.Errorf("%s: %w", f.label, ctx.Err())
		default:
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: the fake did not answer GET %s within %s; check that it listens on 127.0.0.1 at the port given by {port}\n%s",
				f.label, f.spec.Ready, f.spec.ReadyTimeout, indent(f.Output()))
		}
		t := time.NewTimer(25 * time.Millisecond)
		select {
		case <-t.C:
		case <-f.done:
			t.Stop()
		case <-ctx.Done():
			t.Stop()
		}
	}
}

func (f *Fake) exitErr() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err == nil {
		return errors.New("exit status 0")
	}
	return f.err
}

// Handler forwards to the fake over plain HTTP, keeping the production Host header so a fake serving several
// hosts can tell them apart.
func (f *Fake) Handler() http.Handler {
	target := &url.URL{Scheme: "http", Host: "127.0.0.1:" + strconv.Itoa(f.port)}
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.Host = pr.In.Host
			pr.Out.Header.Set("X-Forwarded-Proto", pr.In.URL.Scheme)
		},
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			http.Error(w, fmt.Sprintf("astrabox: the fake for %s did not answer: %v", f.label, err), http.StatusBadGateway)
		},
	}
}

// Alive reports a fake that has exited mid-run.
func (f *Fake) Alive() error {
	select {
	case <-f.done:
		return fmt.Errorf("%s: the fake exited during the run: %v\n%s", f.label, f.exitErr(), indent(f.Output()))
	default:
		return nil
	}
}

// Reset clears the fake's state: a reset request it may implement, else (or when configured) a restart.
func (f *Fake) Reset(ctx context.Context) error {
	switch f.spec.Reset {
	case ResetNone:
		return nil
	case ResetRequest:
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, fmt.Sprintf("http://127.0.0.1:%d%s", f.port, ResetPath), nil)
		resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode < 300 {
				return nil
			}
			switch resp.StatusCode {
			case http.StatusNotFound, http.StatusMethodNotAllowed, http.StatusNotImplemented:
				// the fake does not implement the reset request: restart it
			default:
				return fmt.Errorf("%s: POST %s answered %d", f.label, ResetPath, resp.StatusCode)
			}
		}
	}
	f.Close()
	return f.start(ctx)
}

// Close stops the fake's whole process group: SIGTERM, then SIGKILL after a grace period.
func (f *Fake) Close() error {
	f.mu.Lock()
	cmd, done := f.cmd, f.done
	f.cmd = nil
	f.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return nil
	}
	defer releasePort(f.port)
	pgid := cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(stopGrace):
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	select {
	case <-done:
	case <-time.After(stopGrace):
		return fmt.Errorf("%s: the fake (pid %d) did not exit after SIGKILL", f.label, pgid)
	}
	return nil
}

func indent(s string) string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return "  (the fake printed nothing)"
	}
	return "  " + strings.ReplaceAll(s, "\n", "\n  ")
}

// tail keeps the last max bytes written to it.
type tail struct {
	mu  sync.Mutex
	max int
	buf bytes.Buffer
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf.Write(p)
	if over := t.buf.Len() - t.max; over > 0 {
		t.buf.Next(over)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.buf.String()
}
