package simulate

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/astrabox-dev/astrabox/internal/double"
	"github.com/astrabox-dev/astrabox/internal/harness"
)

// Stage is the platform of a scenario prepared ahead: a fresh deployment double and fresh replica processes,
// each on a fresh host, started (and the provider loaded) while another scenario runs, so that the scenario
// that takes it does not wait for them. A stage serves exactly one scenario (Options.Stage); nothing of it is
// ever reused.
type Stage struct {
	ready    chan struct{} // closed once the stage is prepared (or failed)
	dbl      *double.Double
	replicas []*replica
	hostDirs []*host
	info     *harness.LoadInfo
	err      error
	clock    atomic.Pointer[Clock]
	platform atomic.Pointer[platform]
	taken    atomic.Bool
}

// PrepareStage starts preparing, in the background, a stage of n replicas of the provider described by o
// (o.Hosts must be set). ctx bounds the preparation only.
func PrepareStage(ctx context.Context, o Options, n int) *Stage {
	st := &Stage{ready: make(chan struct{})}
	go func() {
		defer close(st.ready)
		st.err = st.prepare(ctx, o, n)
	}()
	return st
}

func (st *Stage) now() time.Time {
	if c := st.clock.Load(); c != nil {
		return c.Now()
	}
	return DefaultEpoch
}

func (st *Stage) prepare(ctx context.Context, o Options, n int) error {
	if o.Hosts == nil || o.Target == "" {
		return fmt.Errorf("a stage needs hosts and a provider")
	}
	d, err := double.Start(double.Options{Clock: st.now})
	if err != nil {
		return fmt.Errorf("start the deployment double: %w", err)
	}
	st.dbl = d
	errs := make([]error, n)
	hosts := make([]*host, n)
	infos := make([]*harness.LoadInfo, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		r := &replica{name: ReplicaName(i + 1)}
		st.replicas = append(st.replicas, r)
		wg.Add(1)
		go func(i int, r *replica) {
			defer wg.Done()
			h, err := o.Hosts.newHost(r.name)
			if err != nil {
				errs[i] = err
				return
			}
			hosts[i] = h
			r.proc, infos[i], r.loaded, errs[i] = spawn(ctx, o, d, r.name, stageSandbox{st: st, r: r}, o.Hosts.ForkServer(r.name), h.env, nil)
		}(i, r)
	}
	wg.Wait()
	for i := range hosts {
		if hosts[i] != nil {
			st.hostDirs = append(st.hostDirs, hosts[i])
		}
		if st.info == nil && infos[i] != nil {
			st.info = infos[i]
		}
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// take hands the stage to the platform of a scenario of n replicas, or reports false (the stage failed or
// was taken). A stage smaller than the scenario gives it its replicas and the double; the scenario starts the
// replicas it lacks itself (they have no process yet) before it plays a step, as a scenario without a stage
// starts all of its own: a stage is sized for the scenarios most likely to take it, and a replica forked
// ahead that no scenario uses is the one cost of fresh replicas that buys nothing.
func (st *Stage) take(p *platform, n int) bool {
	<-st.ready
	if st.err != nil || !st.taken.CompareAndSwap(false, true) {
		return false
	}
	if err := st.dbl.Reset(p.sc.Seed); err != nil {
		st.taken.Store(false)
		return false
	}
	st.clock.Store(p.clock)
	st.platform.Store(p)
	p.dbl = st.dbl
	k := min(n, len(st.replicas))
	p.replicas = append([]*replica(nil), st.replicas[:k]...)
	p.spare = st.replicas[k:]
	for i := k; i < n; i++ {
		p.replicas = append(p.replicas, &replica{name: ReplicaName(i + 1)})
	}
	for _, r := range st.replicas {
		p.takeConns(r.name, r.proc.PID(), &r.loaded)
	}
	p.hostDirs = st.hostDirs
	p.info = st.info
	return true
}

// Close stops a stage that no scenario took: its processes, its double, its host directories.
func (st *Stage) Close() {
	<-st.ready
	if !st.taken.CompareAndSwap(false, true) {
		return
	}
	closeAll(st.replicas)
	if st.dbl != nil {
		st.dbl.Close()
	}
	for _, h := range st.hostDirs {
		removeTree(h.root)
	}
}

// closeAll closes the processes of replicas, all at once.
func closeAll(replicas []*replica) {
	var wg sync.WaitGroup
	for _, r := range replicas {
		if r.proc != nil {
			wg.Add(1)
			go func(pr *harness.Process) { defer wg.Done(); pr.Close() }(r.proc)
		}
	}
	wg.Wait()
}

// stageSandbox answers a staged replica's SandboxHandle calls through the platform that took the stage.
type stageSandbox struct {
	st *Stage
	r  *replica
}

// Sandbox serves a request (harness.SandboxServer); before a scenario took the stage, every operation fails.
func (s stageSandbox) Sandbox(ctx context.Context, req harness.SandboxRequest) harness.SandboxResponse {
	p := s.st.platform.Load()
	if p == nil {
		return harness.SandboxResponse{Error: &harness.SandboxError{Type: "OSError", Message: "no scenario is running"}}
	}
	return replicaSandbox{p: p, r: s.r}.Sandbox(ctx, req)
}
