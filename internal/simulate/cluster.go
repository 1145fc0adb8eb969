package simulate

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/astrabox-dev/astrabox/internal/double"
	"github.com/astrabox-dev/astrabox/internal/harness"
)

// Cluster is a set of warm replica processes and one deployment double that several runs reuse in turn, so
// that exploring thousands of scenarios does not start an interpreter per scenario. Between runs the double
// is reset; a replica that died is restarted on its next callback. A Cluster serves one run at a time.
type Cluster struct {
	o        Options
	clock    *Clock
	dbl      *double.Double
	replicas []*replica
	info     *harness.LoadInfo
	mu       sync.Mutex
	current  *platform
	// spares are standby processes, one per replica name, loaded and ready to replace a replica lost with its
	// host, so that host loss costs no interpreter start on the critical path.
	spares  map[string]*harness.Process
	filling map[string]chan struct{} // closed when the standby being started for a name is ready (or failed)
	closed  bool
	ctx     context.Context
	wg      sync.WaitGroup
	// zygote forks the cluster's replica processes (nil if it could not start: processes are then started
	// one interpreter each); ownZygote when the cluster started it and so closes it.
	zygote    *harness.Zygote
	ownZygote bool
}

// forkServer returns the cluster's fork server, or nil (also on a nil cluster).
func (c *Cluster) forkServer() *harness.Zygote {
	if c == nil {
		return nil
	}
	return c.zygote
}

// takeSpare hands out the standby process of a replica and starts refilling it. A standby still starting is
// waited for: it is further along than a process started now would be.
func (c *Cluster) takeSpare(name string) *harness.Process {
	c.mu.Lock()
	proc := c.spares[name]
	delete(c.spares, name)
	starting := c.filling[name]
	c.mu.Unlock()
	if proc == nil && starting != nil {
		select {
		case <-starting:
		case <-c.ctx.Done():
		}
		c.mu.Lock()
		proc = c.spares[name]
		delete(c.spares, name)
		c.mu.Unlock()
	}
	if proc != nil && !proc.Alive() {
		proc.Close()
		proc = nil
	}
	c.refill(name)
	return proc
}

// refill starts a standby process for a replica in the background, unless one exists or is starting.
func (c *Cluster) refill(name string) {
	c.mu.Lock()
	if c.closed || c.spares[name] != nil || c.filling[name] != nil {
		c.mu.Unlock()
		return
	}
	ready := make(chan struct{})
	c.filling[name] = ready
	c.wg.Add(1)
	c.mu.Unlock()
	go func() {
		defer c.wg.Done()
		proc, _, err := spawn(c.ctx, c.o, c.dbl, name, c)
		c.mu.Lock()
		defer c.mu.Unlock()
		delete(c.filling, name)
		defer close(ready)
		if err != nil {
			return
		}
		if c.closed {
			go proc.Close()
			return
		}
		c.spares[name] = proc
	}()
}

// StandBy starts a standby process for every replica in the background, so that even the first host loss of
// a replica costs no interpreter start on the critical path. Exploration, where host loss is frequent, asks
// for it; a single default-suite run does not (on two cores the extra starts would slow it down).
func (c *Cluster) StandBy() {
	c.mu.Lock()
	names := make([]string, 0, len(c.replicas))
	for _, r := range c.replicas {
		names = append(names, r.name)
	}
	c.mu.Unlock()
	for _, name := range names {
		c.refill(name)
	}
}

// Sandbox forwards a provider's SandboxHandle call to the run the cluster currently serves.
func (c *Cluster) Sandbox(ctx context.Context, req harness.SandboxRequest) harness.SandboxResponse {
	c.mu.Lock()
	p := c.current
	c.mu.Unlock()
	if p == nil {
		return harness.SandboxResponse{Error: &harness.SandboxError{Type: "OSError", Message: "no scenario is running"}}
	}
	return p.Sandbox(ctx, req)
}

// NewCluster starts n replicas of the provider described by o (o.Cluster is ignored) and a double.
func NewCluster(ctx context.Context, o Options, n int) (*Cluster, error) {
	c := &Cluster{clock: NewClock(DefaultEpoch), spares: map[string]*harness.Process{}, filling: map[string]chan struct{}{}, ctx: ctx}
	o.Cluster = c
	c.o = o
	d, err := double.Start(double.Options{Clock: func() time.Time { return c.now() }})
	if err != nil {
		return nil, fmt.Errorf("start the deployment double: %w", err)
	}
	c.dbl = d
	// One interpreter start for the fork server, then a fork per replica: cheaper than an interpreter per
	// replica, and every later replacement of a lost replica is a fork too.
	if o.Zygote != nil {
		c.zygote = o.Zygote
	} else if z, err := harness.StartZygote(ctx, o.Python, o.ProjectDir); err == nil {
		c.zygote, c.ownZygote = z, true
	} else if o.Verbose != nil {
		fmt.Fprintf(o.Verbose, "astrabox: replicas start without a fork server: %v\n", err)
	}
	p := c.platformFor(ctx, nil)
	for i := 0; i < n; i++ {
		p.replicas = append(p.replicas, &replica{name: fmt.Sprintf("r%d", i+1)})
	}
	if err := p.startReplicas(); err != nil {
		p.close()
		if c.ownZygote {
			c.zygote.Close()
		}
		return nil, err
	}
	c.replicas = p.replicas
	c.info = p.info
	return c, nil
}

func (c *Cluster) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.clock.Now()
}

// platformFor builds a platform value bound to the cluster's double, for starting replicas.
func (c *Cluster) platformFor(ctx context.Context, sc *Scenario) *platform {
	return &platform{ctx: ctx, sc: sc, o: c.o, dbl: c.dbl, sandboxes: map[string]*Sandbox{}, current: map[string]*CallRecord{},
		callSeq: map[string]int{}, callTags: map[string]string{}, hist: &History{}, clock: c.clock}
}

// prepare binds a run's platform to the cluster: it resets the double, points the double's clock at the
// run's clock, and lends the run the replicas it needs (starting more when the scenario wants more).
func (c *Cluster) prepare(p *platform) error {
	if err := c.dbl.Reset(p.sc.Seed); err != nil {
		return err
	}
	c.mu.Lock()
	c.clock = p.clock
	// Replicas answer sandbox requests through the cluster; route them to this run.
	c.current = p
	c.mu.Unlock()
	p.dbl = c.dbl
	p.info = c.info
	for len(c.replicas) < p.sc.Replicas {
		c.replicas = append(c.replicas, &replica{name: fmt.Sprintf("r%d", len(c.replicas)+1)})
	}
	p.replicas = c.replicas[:p.sc.Replicas]
	// Record the replicas as a cold run does, so that warm and cold histories are the same.
	for _, r := range p.replicas {
		if r.proc == nil || !r.proc.Alive() {
			if err := p.startReplica(r); err != nil {
				return err
			}
		}
		p.started(r)
	}
	return nil
}

// Close stops every replica, every standby process and the double.
func (c *Cluster) Close() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.wg.Wait()
	var wg sync.WaitGroup
	for _, proc := range c.spares {
		wg.Add(1)
		go func(pr *harness.Process) { defer wg.Done(); pr.Close() }(proc)
	}
	for _, r := range c.replicas {
		if r.proc != nil {
			wg.Add(1)
			go func(pr *harness.Process) { defer wg.Done(); pr.Close() }(r.proc)
		}
	}
	wg.Wait()
	c.dbl.Close()
	if c.ownZygote {
		c.zygote.Close()
	}
}
