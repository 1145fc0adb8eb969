package simulate

import (
	"context"
	"sync/atomic"
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
// was taken or closed already.
func (pr *Prepared) play(ctx context.Context, o Options) (h *History, played bool, err error) {
	<-pr.ready
	if !pr.taken.CompareAndSwap(false, true) {
		return nil, false, nil
	}
	p := pr.p
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
