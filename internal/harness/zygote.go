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

	mu      sync.Mutex
	waiters map[int]chan exitState // harnesses (pid) and their supervisors, by pid, until each is reaped
	dead    bool
	stderr  bytes.Buffer

	done  chan struct{} // the reader stopped: the zygote is gone
	stops stopBroadcast // the fork server found the kit stopped by a signal and continued it
}

type zygoteMsg struct {
	Kind       string `json:"kind"`
	PID        int    `json:"pid"`
	Supervisor int    `json:"supervisor"`
	Status     int    `json:"status"`
	Message    string `json:"message"`
	Errno      int    `json:"errno"`

	exit, gone chan exitState // set by the reader on a spawned answer
}

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
		waiters: map[int]chan exitState{}, done: make(chan struct{})}
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
		if m.Kind == "ready" {
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

// zygoteEnviron is the environment shared by every replica: ours minus the per-process harness variables,
// which each forked child receives in its spawn request.
func zygoteEnviron() []string {
	var env []string
	for _, kv := range os.Environ() {
		if isHarnessVar(kv) {
			continue
		}
		env = append(env, kv)
	}
	return env
}

func (z *Zygote) stderrTail() string {
	z.mu.Lock()
	defer z.mu.Unlock()
	return lastBytes(z.stderr.String(), tailForError)
}

// read delivers the zygote's messages: answers to spawn requests, and exits of its children. The waiters of a
// spawned harness and of its supervisor are registered here, before the answer is passed on, so that no exit
// can come before its waiter.
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
		if m.Kind == "exit" {
			z.deliver(m.PID, exitState{status: syscall.WaitStatus(m.Status), known: true})
			continue
		}
		if m.Kind == "kit-stopped" {
			z.stops.notify()
			continue
		}
		if m.Kind == "spawned" && m.PID > 0 && m.Supervisor > 0 {
			m.exit, m.gone = make(chan exitState, 1), make(chan exitState, 1)
			z.mu.Lock()
			z.waiters[m.PID], z.waiters[m.Supervisor] = m.exit, m.gone
			z.mu.Unlock()
		}
		select {
		case z.answers <- m:
		default: // nobody asked (the request timed out): the harness is of no use
			if m.PID > 0 {
				killGroup(m.PID, syscall.SIGKILL)
			}
		}
	}
	// The zygote is gone, and so are the supervisors (nothing else holds the socket): their children were
	// re-parented and are reaped by someone else. Tell their waiters when each is gone, with the status unknown.
	z.mu.Lock()
	z.dead = true
	orphans := z.waiters
	z.waiters = map[int]chan exitState{}
	z.mu.Unlock()
	for pid, ch := range orphans {
		go awaitGone(pid, ch)
	}
}

func (z *Zygote) deliver(pid int, e exitState) {
	z.mu.Lock()
	ch := z.waiters[pid]
	delete(z.waiters, pid)
	z.mu.Unlock()
	if ch != nil {
		ch <- e
	}
}

// awaitGone reports an unknown exit on ch once pid is gone: for a child whose fork server died before it, and
// which only its new parent can reap.
func awaitGone(pid int, ch chan exitState) {
	for alive(pid) {
		time.Sleep(20 * time.Millisecond)
	}
	ch <- exitState{why: errors.New("its fork server was gone: exit status unknown")}
}

// alive reports whether pid is a live (non-zombie) process.
func alive(pid int) bool {
	st, ok := readStat(pid)
	return ok && st.state != 'Z'
}

// launch forks a harness through the fork server (see launcher). The server forks a supervisor, which forks
// the harness with s.env as its whole environment and s.dir as its working directory, on the child's ends of
// s.pipes.
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
	if m.Kind != "spawned" || m.exit == nil {
		if m.Errno != 0 {
			return nil, fmt.Errorf("fork a harness: %s: %w", m.Message, syscall.Errno(m.Errno))
		}
		return nil, fmt.Errorf("fork a harness: %s", m.Message)
	}
	gone := make(chan struct{})
	l := &launched{pid: m.PID, supervisor: m.Supervisor, exit: m.exit, gone: gone, forked: true, stopped: z.stops.subscribe()}
	go func() {
		e := <-m.gone
		// The supervisor exits 0 only once it has reaped its last child: nothing of the harness is left.
		l.drained = e.known && e.status.Exited() && e.status.ExitStatus() == 0
		close(gone)
	}()
	if info, ok := readStat(m.Supervisor); ok {
		l.supervisorStart = info.start
	}
	return l, nil
}

// PID is the fork server's process id (the parent of every supervisor it forks).
func (z *Zygote) PID() int { return z.pid }

// Close ends the fork server, and with it every harness it forked that is still running (their supervisors
// die with it and take their trees along): close those first to have them shut down gracefully.
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
