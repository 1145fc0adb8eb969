package simulate

import (
	"context"
	"errors"
	"io/fs"
	"sync"
	"sync/atomic"

	"github.com/astrabox-dev/astrabox/internal/harness"
)

// Prepared is one known scenario whose platform was opened ahead (Prepare): its declared services reset, its
// fresh double, its replicas' egress proxies and its fresh replica processes, with the provider loaded,
// exactly as Run opens them before the first step, only earlier. Run plays it (Options.Prepared). Unlike a
// Stage, which any scenario may take, a Prepared belongs to the one scenario it was made for, with that
// scenario's seed, consent and slot of declared services, so nothing a check judges differs from a run that
// opened the scenario itself: the same requests reach the same double in the same order, each replica's
// traffic goes through its own proxy of this scenario's, and nothing is reset or reused.
type Prepared struct {
	sc    *Scenario
	ready chan struct{}
	p     *platform
	err   error
	taken atomic.Bool
}

// Prepare starts opening sc's platform in the background with o (its Services, when set, are the slot whose
// stand-ins the scenario will use: Prepare resets them now, so nothing else may use them until the scenario
// ends). ctx bounds the scenario's processes, as Run's does. Options.Stage, Closing and Hang are ignored
// here: the Options Run is given when it plays the scenario set the last two.
func Prepare(ctx context.Context, sc *Scenario, o Options) *Prepared {
	o.Stage, o.Closing, o.Hang = nil, nil, nil
	pr := &Prepared{sc: sc, ready: make(chan struct{}), p: newPlatform(ctx, sc, o)}
	go func() {
		defer close(pr.ready)
		pr.err = pr.p.open()
	}()
	return pr
}

// For tells whether the prepared platform is sc's (the same scenario value it was made for).
func (pr *Prepared) For(sc *Scenario) bool { return pr != nil && pr.sc == sc }

// Ready is closed once the platform is opened (or failed to open).
func (pr *Prepared) Ready() <-chan struct{} { return pr.ready }

// play plays the prepared scenario with the closing and hang options of the Run that takes it; false when it
// was taken or closed already, or was opened ahead and its processes could not leave the idle class (then
// it is closed, and Run opens the scenario itself).
func (pr *Prepared) play(ctx context.Context, o Options) (h *History, played bool, err error) {
	// Opened ahead: its processes leave the idle class before the open is waited for, so that the rest of
	// it runs as a scenario's own open would.
	restored := pr.p.ahead.restore()
	<-pr.ready
	if !pr.taken.CompareAndSwap(false, true) {
		return nil, false, nil
	}
	p := pr.p
	if restored != nil {
		p.o.Closing = nil
		p.shut()
		return nil, false, nil
	}
	p.ctx, p.o.Closing, p.o.Hang = ctx, o.Closing, o.Hang
	if pr.err != nil {
		p.shut()
		return nil, true, pr.err
	}
	defer p.shut()
	h, err = p.play()
	return h, true, err
}

// Close stops a prepared platform that no scenario played: its processes, proxies, double and host
// directories. It waits for the preparation to end first.
func (pr *Prepared) Close() {
	if pr == nil {
		return
	}
	<-pr.ready
	if pr.taken.CompareAndSwap(false, true) {
		pr.p.shut()
	}
}

// CanPrepareAhead tells whether PrepareAhead may be used here: the system has an idle scheduling class and
// this process may move a thread out of it again (Linux, with CAP_SYS_NICE or an RLIMIT_NICE that allows
// nice 0). Without that, a replica loaded in the idle class would play its scenario there.
func CanPrepareAhead() bool { return canLeaveIdle() }

// PrepareAhead is Prepare for a scenario that will be played after scenarios now running: the same open, in
// the background, except that each replica process, once it answered the harness's handshake, loads the
// provider in the idle scheduling class (SCHED_IDLE: it runs only on a CPU that no other process wants), so
// that it takes no CPU time from a running scenario's callbacks. Run, when it takes it, moves those
// processes back to the normal class before it waits for the open to end and plays the first step; when
// that fails, it closes the platform and opens the scenario itself, as without one. Only where
// CanPrepareAhead. The open begins once every channel in after is closed (the platforms still opening, so
// that their forks and loads do not queue behind this one's); Run, when it takes the platform, waits for
// them too.
func PrepareAhead(ctx context.Context, sc *Scenario, o Options, after ...<-chan struct{}) *Prepared {
	o.Stage, o.Closing, o.Hang = nil, nil, nil
	pr := &Prepared{sc: sc, ready: make(chan struct{}), p: newPlatform(ctx, sc, o)}
	pr.p.ahead.idle = true
	go func() {
		defer close(pr.ready)
		for _, c := range after {
			select {
			case <-c:
			case <-ctx.Done():
			}
		}
		pr.err = pr.p.open()
	}()
	return pr
}

// idleClass is the scheduling of a platform's replica processes while it is opened ahead: in the idle
// class until the scenario takes it (restore), in the normal class from then on, and for every process
// started after that.
type idleClass struct {
	mu      sync.Mutex
	idle    bool
	lowered []int // the pids put in the idle class
}

// lower puts a replica process just started in the idle class while the platform is opened ahead. A failure
// is not the scenario's business: the process then loads in the normal class, as without PrepareAhead.
func (c *idleClass) lower(proc *harness.Process) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.idle {
		return
	}
	if setIdle(proc.PID(), true) == nil {
		c.lowered = append(c.lowered, proc.PID())
	}
}

// restore moves every process lower put in the idle class back to the normal class, with every process
// it started meanwhile (setTreeNormal), and keeps later ones there. A process that has exited meanwhile is
// skipped (its load failed: the open reports it).
func (c *idleClass) restore() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.idle = false
	var errs []error
	for _, pid := range c.lowered {
		if err := setTreeNormal(pid); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	c.lowered = nil
	return errors.Join(errs...)
}
