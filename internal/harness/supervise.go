package harness

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/astrabox-dev/astrabox/internal/warden"
)

// Supervision: the waiter, the memory poller, the sweep of strays and the kill discipline. Every wait here
// has a bound; none waits on a pipe that a process the kit cannot kill may hold.

const (
	// treeBound bounds the wait, after the harness exited, for its supervisor to have killed and reaped
	// everything below it; past it the kit sweeps by itself.
	treeBound = 2 * time.Second
	// goneBound bounds any wait for a process to go away after SIGKILL.
	goneBound = 10 * time.Second
	// drainBound bounds the wait for the reader and the drains after the process is gone.
	drainBound = 500 * time.Millisecond
)

// waitAll waits until every channel is closed or d has passed, whichever comes first, and reports whether
// all were closed. One deadline serves every channel.
func waitAll(d time.Duration, chans ...<-chan struct{}) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	for _, ch := range chans {
		select {
		case <-ch:
		case <-t.C:
			return false
		}
	}
	return true
}

// awaitExited waits, at most goneBound, for the process to be gone and its error known.
func (p *Process) awaitExited() bool { return waitAll(goneBound, p.exited) }

func (p *Process) waitLoop() {
	defer p.wg.Done()
	e := p.awaitExit()
	p.mu.Lock()
	p.st.exit = e
	p.st.advance(phaseExited)
	p.mu.Unlock()
	close(p.waitDone)
	p.sandboxEnd()
	p.logf("exited: %+v", e)
	// Orphans left in the group die with the harness; the supervisor (the fork server, for a forked harness)
	// kills the rest below it and then reports the tree gone.
	killGroup(p.pid, syscall.SIGKILL)
	ended := waitAll(treeBound, p.proc.gone)
	if !ended {
		p.logf("the tree of %d was not reported gone within %s; sweeping", p.pid, treeBound)
	}
	// A supervisor (or fork server) that drained the tree leaves nothing to sweep for: one pass over /proc saved
	// per replica.
	clean := ended && p.proc.drained || p.sweep()
	if !ended { // a supervisor that does not end (a provider stopped it) is ended too
		if s := p.supervisorAlive(); s > 0 {
			_ = syscall.Kill(s, syscall.SIGKILL)
		}
		waitAll(treeBound, p.proc.gone)
	}
	// Let the reader deliver a last reply and the drains reach EOF.
	waitAll(drainBound, p.readDone, p.errDone)
	p.mu.Lock()
	p.st.swept = clean
	p.st.fatal = classify(exitFacts{replica: p.o.Replica, exit: p.st.exit, kill: p.st.kill, protoErr: p.st.protoErr, memory: p.st.memory,
		stderrTail: p.stderr.recentTail()})
	p.st.advance(phaseGone)
	p.mu.Unlock()
	close(p.exited)
}

// awaitExit waits for the harness's exit as its supervisor reports it. A supervisor that ends without
// reporting it (it was killed) leaves the harness to its parent-death signal: wait, bounded, for it to be gone.
func (p *Process) awaitExit() exitState {
	select {
	case e := <-p.proc.exit:
		return e
	case <-p.proc.gone:
	}
	select {
	case e := <-p.proc.exit:
		return e
	default:
	}
	killGroup(p.pid, syscall.SIGKILL)
	for end := time.Now().Add(goneBound); alive(p.pid) && time.Now().Before(end); {
		time.Sleep(20 * time.Millisecond)
	}
	return exitState{why: errors.New("its supervisor ended before it: exit status unknown")}
}

func (p *Process) pollMemory() {
	defer p.wg.Done()
	t := time.NewTicker(pollEvery)
	defer t.Stop()
	for i := 0; ; i++ {
		select {
		case <-p.stopPoll:
			return
		case <-p.waitDone:
			return
		case <-p.proc.stopped:
			p.abort(KindProtocol, errStoppedKit)
			return
		case <-t.C:
		}
		var rss uint64
		if i%5 == 0 {
			sup := p.supervisorAlive()
			if info, ok := readStat(p.pid); sup == 0 && (!ok || info.state == 'Z') {
				// The harness has exited and no supervisor lives: its end is being handled (the sweep reaps
				// what it left), and a tree measured now would take a pass over all of /proc (a tenth of
				// the polls of an exploration did, a third of their CPU: docs/performance.md).
				continue
			}
			rss = treeRSSWithin(p.pid, sup, p.lim.MemoryRSS)
		} else if info, ok := readStat(p.pid); ok {
			rss = uint64(info.rssPages) * uint64(os.Getpagesize())
		}
		if p.lim.MemoryRSS > 0 && rss > p.lim.MemoryRSS {
			p.mu.Lock()
			if p.st.memory.rss == 0 && p.st.phase < phaseExited {
				p.st.memory = memoryOver{rss: rss, limit: p.lim.MemoryRSS}
			}
			p.mu.Unlock()
			p.abort(KindMemoryLimit, fmt.Errorf("resident size %d MiB exceeded the limit of %d MiB", rss>>20, p.lim.MemoryRSS>>20))
			return
		}
	}
}

// errStoppedKit is the error of every replica alive when the kit was found stopped by a signal it did not
// give itself (a provider's SIGSTOP: the kit is the parent of the fork server and of the wardens).
var errStoppedKit = errors.New("a process stopped astrabox with a signal (SIGSTOP); astrabox continued itself " +
	"and ends every replica alive at the time: a provider must not signal the processes of the platform")

// supervisorAlive returns the supervisor's pid while it is the process started with the harness, else 0.
func (p *Process) supervisorAlive() int {
	s := p.proc.supervisor
	if s <= 0 {
		return 0
	}
	if info, ok := readStat(s); ok && info.state != 'Z' && (p.proc.supervisorStart == 0 || info.start == p.proc.supervisorStart) {
		return s
	}
	return 0
}

// sweep kills every process left in the group, below the supervisor, or carrying the replica token, until a
// pass over /proc finds none; at most goneBound. It reports whether it ended with none left.
func (p *Process) sweep() bool {
	p.sweepMu.Lock()
	defer p.sweepMu.Unlock()
	for end := time.Now().Add(goneBound); ; {
		pids := strays(p.pid, p.token, p.startTicks)
		if s := p.supervisorAlive(); s > 0 {
			pids = append(pids, warden.Below(s)...)
		}
		if len(pids) == 0 {
			return true
		}
		if time.Now().After(end) {
			p.logf("processes still left after %s: %v", goneBound, pids)
			return false
		}
		for _, pid := range pids {
			p.logf("killing stray process %d", pid)
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		killGroup(p.pid, syscall.SIGKILL)
		time.Sleep(5 * time.Millisecond)
	}
}

// hang dumps the stacks of a harness that does not settle and kills it.
func (p *Process) hang(cause error) {
	if !p.setKill(KindHung, cause) {
		return
	}
	before := p.stderr.bytesSeen()
	p.logf("sending SIGUSR1 for a stack dump")
	_ = syscall.Kill(p.pid, syscall.SIGUSR1)
	// faulthandler writes from the signal handler; wait until stderr has
	// grown and then stayed quiet, at most one second.
	end := time.Now().Add(time.Second)
	last, quiet := before, time.Time{}
	for time.Now().Before(end) {
		time.Sleep(20 * time.Millisecond)
		n := p.stderr.bytesSeen()
		if n != last {
			last, quiet = n, time.Now()
			continue
		}
		if n > before && time.Since(quiet) >= 100*time.Millisecond {
			break
		}
		select {
		case <-p.waitDone:
			end = time.Now()
		default:
		}
	}
	stack, _ := p.stderr.since(before)
	p.mu.Lock()
	p.st.kill.stack = strings.TrimSpace(stack)
	p.mu.Unlock()
	killGroup(p.pid, syscall.SIGKILL)
}

// setKill records why we are killing the process; the first reason wins.
// It returns false when a reason was already recorded or the process is already gone.
func (p *Process) setKill(kind ErrorKind, err error) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.st.kill.kind != "" || p.st.phase >= phaseExited {
		return false
	}
	p.st.kill = killReason{kind: kind, err: err}
	p.st.advance(phaseStopping)
	return true
}

// abort kills the group at once for reason kind.
func (p *Process) abort(kind ErrorKind, err error) {
	if p.setKill(kind, err) {
		p.logf("killing: %s: %v", kind, err)
	}
	killGroup(p.pid, syscall.SIGKILL)
}

// Kill ends the process at once, as when the host is lost: SIGKILL to the
// group, then everything below its supervisor and every stray is killed.
// Calls in flight and later calls fail with KindClosed. Safe to call more
// than once, and after Close.
func (p *Process) Kill() {
	p.closeOnce.Do(func() { p.closeErr = p.shutdown(false) })
}

// Close shuts the harness down gracefully: shutdown, then after
// Limits.CloseTimeout SIGTERM to the group, after Limits.Grace SIGKILL, then
// everything left below its supervisor and every stray (a process whose
// environment carries the replica token) is killed. It returns a KindHung
// *ProcessError when the harness had to be forced, the unreported error of a
// process that died by itself, else nil. Safe to call more than once; later
// calls return the first result.
func (p *Process) Close() error {
	p.closeOnce.Do(func() { p.closeErr = p.shutdown(true) })
	return p.closeErr
}

func (p *Process) shutdown(graceful bool) error {
	p.mu.Lock()
	p.st.closing = true
	p.mu.Unlock()
	var result error
	select {
	case <-p.waitDone:
	default:
		p.setKill(KindClosed, errors.New("closed by the host"))
		if graceful {
			result = p.gracefulStop()
		} else {
			p.logf("kill")
			killGroup(p.pid, syscall.SIGKILL)
		}
	}
	if !p.awaitExited() {
		p.logf("process %d did not go away after SIGKILL", p.pid)
	}
	p.mu.Lock()
	clean := p.st.swept
	p.mu.Unlock()
	if !clean { // the sweep after the exit found nothing left: nothing can have appeared since
		p.sweep()
	}
	close(p.stopPoll)
	p.reqW.Close()
	// Drains end at EOF unless something we could not kill holds the pipe: then closing our end ends them.
	waitAll(200*time.Millisecond, p.outDone, p.errDone, p.readDone)
	p.outR.Close()
	p.errR.Close()
	p.respR.Close()
	p.wg.Wait()
	if result == nil && graceful {
		p.mu.Lock()
		if f := p.st.fatal; f != nil && !p.st.reported && f.Kind != KindClosed {
			pe := *f
			p.st.reported = true
			result = &pe
		}
		p.mu.Unlock()
	}
	return result
}

func (p *Process) gracefulStop() error {
	p.logf("shutdown")
	if err := p.send(shutdownMsg{Kind: "shutdown"}, p.lim.CloseTimeout); err != nil {
		p.logf("send shutdown: %v", err)
	}
	if waitAll(p.lim.CloseTimeout, p.waitDone) {
		return nil
	}
	p.logf("no exit %s after shutdown; SIGTERM", p.lim.CloseTimeout)
	killGroup(p.pid, syscall.SIGTERM)
	how := "SIGTERM"
	if !waitAll(p.lim.Grace, p.waitDone) {
		p.logf("no exit %s after SIGTERM; SIGKILL", p.lim.Grace)
		killGroup(p.pid, syscall.SIGKILL)
		how = "SIGKILL"
	}
	pe := p.fatalErr()
	pe.Kind = KindHung
	pe.Err = fmt.Errorf("the harness did not exit within %s after shutdown and was stopped with %s", p.lim.CloseTimeout, how)
	return pe
}
