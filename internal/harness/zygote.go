package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Zygote is a fork server: one Python process that has imported the harness and forks ready harness
// processes on request (see _harness/zygote.py). A forked replica costs a few milliseconds instead of an
// interpreter start, site and the harness imports. A Process started with Options.Zygote behaves as one
// started directly: its own process group, pipes, environment, limits, hello and load; only its exit status
// travels through the zygote, the one process that can reap it.
type Zygote struct {
	cmd  *exec.Cmd
	conn *net.UnixConn
	pid  int

	spawnMu sync.Mutex // one spawn request at a time
	answers chan zygoteMsg
	forks   atomic.Int64 // harnesses forked so far (Forks)

	mu      sync.Mutex
	waiters map[int]*forkedWaiter // forked harnesses, by pid, until the server says each one's tree is gone
	dead    bool
	stderr  bytes.Buffer

	done  chan struct{} // the reader stopped: the zygote is gone
	stops stopBroadcast // the fork server found the kit stopped by a signal and continued it
}

type zygoteMsg struct {
	Kind    string `json:"kind"`
	PID     int    `json:"pid"`
	Status  int    `json:"status"`
	Drained bool   `json:"drained"`
	Message string `json:"message"`
	Errno   int    `json:"errno"`

	w *forkedWaiter // set by the reader on a spawned answer
}

// forkedWaiter receives what the fork server says of one harness it forked: its exit (once), then that its
// tree is gone (once), with drained true when the server killed and reaped everything the harness left.
type forkedWaiter struct {
	exit chan exitState
	gone chan bool
}

// Message kinds of the fork server (see _harness/zygote.py).
const (
	zygoteReady      = "ready"
	zygoteSpawned    = "spawned"
	zygoteExit       = "exit"
	zygoteGone       = "gone"
	zygoteKitStopped = "kit-stopped"
)

// zygoteStart bounds the fork server's start-up (an interpreter start plus the harness imports).
const zygoteStart = 30 * time.Second

// zygoteAnswer bounds the wait for the answer to one spawn request (a variable for tests).
var zygoteAnswer = 30 * time.Second

// StartZygote starts a fork server for python in the project directory dir. env entries (NAME=value) are
// added to its environment: PYTHONHASHSEED there is the string-hash seed of every process it forks, which a
// fork cannot change.
func StartZygote(ctx context.Context, python, dir string, env ...string) (*Zygote, error) {
	if python == "" {
		python = "python3"
	}
	sdk, err := SDKDir()
	if err != nil {
		return nil, fmt.Errorf("start the fork server: %w", err)
	}
	if err := forkServerSupported(); err != nil {
		return nil, fmt.Errorf("start the fork server: %w", err)
	}
	if err := ensureRoom("the fork server"); err != nil {
		return nil, err
	}
	fds, err := zygoteSocketpair()
	if err != nil {
		return nil, fmt.Errorf("start the fork server: socketpair: %w", err)
	}
	ours, theirs := os.NewFile(uintptr(fds[0]), "zygote"), os.NewFile(uintptr(fds[1]), "zygote-child")
	defer theirs.Close()
	fc, err := net.FileConn(ours)
	ours.Close()
	if err != nil {
		return nil, fmt.Errorf("start the fork server: %w", err)
	}
	z := &Zygote{conn: fc.(*net.UnixConn), answers: make(chan zygoteMsg, 1),
		waiters: map[int]*forkedWaiter{}, done: make(chan struct{})}
	cmd := exec.Command(python, "-B", filepath.Join(sdk, "astrabox", "_harness", "__main__.py"))
	cmd.Dir = dir
	cmd.ExtraFiles = []*os.File{theirs}
	cmd.Stderr = &lockedWriter{mu: &z.mu, w: &z.stderr, limit: 16 << 10}
	// Its own session (no terminal); it dies with the kit, and its children (the supervisors) with it.
	cmd.SysProcAttr = zygoteAttr()
	// The token placeholder has the length of a real token: each forked child writes its own token over it in
	// its copy of this environment block, so that /proc/<pid>/environ of the child and of everything it forks
	// carries the token the sweep looks for (see stamp_token in zygote.py).
	cmd.Env = append(zygoteEnviron(), "ASTRABOX_HARNESS_ZYGOTE=1", "ASTRABOX_HARNESS_COOKIE=zygote",
		"ASTRABOX_PYCACHE="+pycacheDir(sdk), "MALLOC_ARENA_MAX=2", "PYTHONDONTWRITEBYTECODE=1",
		"ASTRABOX_REPLICA_TOKEN="+strings.Repeat("0", len(randomHex(16))))
	cmd.Env = append(cmd.Env, env...)
	if err := startOnSpawner(cmd); err != nil {
		z.conn.Close()
		return nil, fmt.Errorf("start the fork server: %w", startError(python, err))
	}
	z.cmd, z.pid = cmd, cmd.Process.Pid
	go z.read()
	t := time.NewTimer(zygoteStart)
	defer t.Stop()
	select {
	case m := <-z.answers:
		if m.Kind == zygoteReady {
			return z, nil
		}
		z.Close()
		return nil, fmt.Errorf("start the fork server: it said %q instead of ready", m.Kind)
	case <-z.done:
		z.Close()
		return nil, fmt.Errorf("start the fork server: it ended before it was ready: %s", z.stderrTail())
	case <-t.C:
		z.Close()
		return nil, fmt.Errorf("start the fork server: not ready within %s", zygoteStart)
	case <-ctx.Done():
		z.Close()
		return nil, fmt.Errorf("start the fork server: %w", ctx.Err())
	}
}

// zygoteEnviron is the environment shared by every replica: ours minus what no harness inherits (inherited),
// such as the per-process harness variables, which each forked child receives in its spawn request.
func zygoteEnviron() []string {
	var env []string
	for _, kv := range os.Environ() {
		if inherited(kv) {
			env = append(env, kv)
		}
	}
	return env
}

func (z *Zygote) stderrTail() string {
	z.mu.Lock()
	defer z.mu.Unlock()
	return lastBytes(z.stderr.String(), tailForError)
}

// read delivers the zygote's messages: answers to spawn requests, the exits of the harnesses and the ends of
// their trees. The waiter of a spawned harness is registered here, before the answer is passed on, so that no
// exit can come before its waiter.
func (z *Zygote) read() {
	defer close(z.done)
	buf := make([]byte, 64<<10)
	for {
		n, _, _, _, err := z.conn.ReadMsgUnix(buf, nil)
		if err != nil || n == 0 {
			break
		}
		var m zygoteMsg
		if json.Unmarshal(buf[:n], &m) != nil {
			continue
		}
		switch m.Kind {
		case zygoteExit:
			if w := z.waiter(m.PID, false); w != nil {
				w.exit <- exitState{status: syscall.WaitStatus(m.Status), known: true}
			}
			continue
		case zygoteGone:
			if w := z.waiter(m.PID, true); w != nil {
				w.gone <- m.Drained
			}
			continue
		case zygoteKitStopped:
			z.stops.notify()
			continue
		case zygoteSpawned:
			if m.PID > 0 {
				m.w = &forkedWaiter{exit: make(chan exitState, 1), gone: make(chan bool, 1)}
				z.mu.Lock()
				z.waiters[m.PID] = m.w
				z.mu.Unlock()
			}
		}
		select {
		case z.answers <- m:
		default: // nobody asked (the request timed out): the harness is of no use
			if m.PID > 0 {
				killGroup(m.PID, syscall.SIGKILL)
			}
		}
	}
	// The zygote is gone: its harnesses die with it (their parent-death signal) and are reaped by someone else.
	// Tell each waiter when its harness is gone, with the status unknown (unless the server reported it) and
	// the tree not known to be gone: Go sweeps.
	z.mu.Lock()
	z.dead = true
	orphans := z.waiters
	z.waiters = map[int]*forkedWaiter{}
	z.mu.Unlock()
	for pid, w := range orphans {
		go awaitGone(pid, w)
	}
}

// waiter returns the waiter of harness pid (nil if none), removing it when last: after its tree is gone.
func (z *Zygote) waiter(pid int, last bool) *forkedWaiter {
	z.mu.Lock()
	defer z.mu.Unlock()
	w := z.waiters[pid]
	if last {
		delete(z.waiters, pid)
	}
	return w
}

// awaitGone reports an unknown exit (unless the exit was reported already) and an undrained tree once pid is
// gone: for a harness whose fork server died before it, and which only its new parent can reap.
func awaitGone(pid int, w *forkedWaiter) {
	for alive(pid) {
		time.Sleep(20 * time.Millisecond)
	}
	select {
	case w.exit <- exitState{why: errors.New("its fork server was gone: exit status unknown")}:
	default: // the exit was reported before the server died
	}
	w.gone <- false
}

// alive reports whether pid is a live (non-zombie) process.
func alive(pid int) bool {
	st, ok := readStat(pid)
	return ok && st.state != 'Z'
}

// launch forks a harness through the fork server (see launcher). The server forks the harness with s.env as
// its whole environment and s.dir as its working directory, on the child's ends of s.pipes. The harness is its
// own subreaper: it is the "supervisor" below which all its descendants stay while it lives.
func (z *Zygote) launch(s launchSpec) (*launched, error) {
	envMap := map[string]string{}
	for _, kv := range append(append([]string(nil), s.env...), s.zygoteEnv...) {
		if i := strings.IndexByte(kv, '='); i > 0 {
			envMap[kv[:i]] = kv[i+1:]
		}
	}
	body, err := json.Marshal(map[string]any{"kind": "spawn", "env": envMap, "dir": s.dir})
	if err != nil {
		return nil, fmt.Errorf("fork a harness: %w", err)
	}
	files := s.pipes.child()
	fds := make([]int, len(files))
	for i, f := range files {
		fds[i] = int(f.Fd())
	}
	z.spawnMu.Lock()
	defer z.spawnMu.Unlock()
	if _, _, err := z.conn.WriteMsgUnix(body, syscall.UnixRights(fds...), nil); err != nil {
		return nil, fmt.Errorf("fork a harness: the fork server is gone: %w", err)
	}
	t := time.NewTimer(zygoteAnswer)
	defer t.Stop()
	var m zygoteMsg
	select {
	case m = <-z.answers:
	case <-z.done:
		return nil, fmt.Errorf("fork a harness: the fork server ended: %s", z.stderrTail())
	case <-t.C:
		// A server that does not answer is of no further use: stop it, so that later starts fall back at once
		// and a late answer cannot be taken for the next request's.
		killGroup(z.pid, syscall.SIGKILL)
		return nil, fmt.Errorf("fork a harness: no answer from the fork server within %s", zygoteAnswer)
	}
	if m.Kind != zygoteSpawned || m.w == nil {
		if m.Errno != 0 {
			return nil, fmt.Errorf("fork a harness: %s: %w", m.Message, syscall.Errno(m.Errno))
		}
		return nil, fmt.Errorf("fork a harness: %s", m.Message)
	}
	z.forks.Add(1)
	gone := make(chan struct{})
	l := &launched{pid: m.PID, supervisor: m.PID, exit: m.w.exit, gone: gone, forked: true, stopped: z.stops.subscribe()}
	go func() {
		// The server says drained only once it has no child left but live harnesses: nothing of this one is left.
		l.drained = <-m.w.gone
		close(gone)
	}()
	if info, ok := readStat(m.PID); ok {
		l.supervisorStart = info.start
	}
	return l, nil
}

// Forks is how many harnesses the fork server has forked so far; for measurements.
func (z *Zygote) Forks() int64 { return z.forks.Load() }

// PID is the fork server's process id (the parent of every harness it forks).
func (z *Zygote) PID() int { return z.pid }

// Close ends the fork server, and with it every harness it forked that is still running and everything below
// them (the server kills them before it exits): close those first to have them shut down gracefully.
func (z *Zygote) Close() error {
	z.conn.Close()
	done := make(chan struct{})
	go func() { z.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		killGroup(z.pid, syscall.SIGKILL)
		<-done
	}
	return nil
}

// lockedWriter keeps the first limit bytes written to it, under mu.
type lockedWriter struct {
	mu    *sync.Mutex
	w     *bytes.Buffer
	limit int
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if room := l.limit - l.w.Len(); room > 0 {
		if len(p) > room {
			l.w.Write(p[:room])
		} else {
			l.w.Write(p)
		}
	}
	return len(p), nil
}

// stopBroadcast tells every subscriber, once, that the kit was found stopped.
type stopBroadcast struct {
	mu   sync.Mutex
	subs []chan struct{}
}

func (b *stopBroadcast) subscribe() <-chan struct{} {
	ch := make(chan struct{})
	b.mu.Lock()
	b.subs = append(b.subs, ch)
	b.mu.Unlock()
	return ch
}

func (b *stopBroadcast) notify() {
	b.mu.Lock()
	subs := b.subs
	b.subs = nil
	b.mu.Unlock()
	for _, ch := range subs {
		close(ch)
	}
}
