package simulate

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/astrabox-dev/astrabox/internal/egress"
	"github.com/astrabox-dev/astrabox/internal/harness"
)

// TestAPreparedScenarioPlaysAsRunOpensIt: a scenario whose platform Prepare opened ahead (double, egress
// proxies, replica processes with the provider loaded) and Run then played gives the byte-identical history
// that Run gives when it opens the scenario itself, with egress control on (each replica behind its own
// proxy) and fork servers; Run plays the prepared platform rather than opening another, and a Prepared made
// for another scenario is closed instead of played.
func TestAPreparedScenarioPlaysAsRunOpensIt(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python")
	}
	ctx, sc, o := probeLifecycle(t)

	opened, err := Run(ctx, sc, o)
	if err != nil {
		t.Fatal(err)
	}
	pr := Prepare(ctx, sc, o)
	<-pr.Ready()
	if pr.err != nil {
		t.Fatalf("prepare: %v", pr.err)
	}
	if n := len(pr.p.replicas); n != sc.Replicas || pr.p.replicas[0].proc == nil || !pr.p.replicas[0].proc.Alive() {
		t.Fatalf("prepared %d replicas (want %d, each running) before the scenario played", n, sc.Replicas)
	}
	if len(pr.p.proxies) != sc.Replicas {
		t.Errorf("prepared %d egress proxies, want one per replica (%d)", len(pr.p.proxies), sc.Replicas)
	}
	po := o
	po.Prepared = pr
	prepared, err := Run(ctx, sc, po)
	if err != nil {
		t.Fatal(err)
	}
	if prepared != pr.p.hist {
		t.Fatalf("Run opened its own platform instead of playing the prepared one")
	}
	a, b := mustJSON(t, opened), mustJSON(t, prepared)
	if !bytes.Equal(a, b) {
		at := 0
		for at < len(a) && at < len(b) && a[at] == b[at] {
			at++
		}
		lo := max(0, at-300)
		t.Fatalf("histories differ at byte %d:\nopened   ...%s\nprepared ...%s", at, a[lo:min(len(a), at+200)], b[lo:min(len(b), at+200)])
	}

	// A Prepared made for another scenario value is closed, and Run opens the scenario itself.
	other := Prepare(ctx, sc.Clone(), o)
	po.Prepared = other
	h, err := Run(ctx, sc, po)
	if err != nil {
		t.Fatal(err)
	}
	if h == other.p.hist || !other.taken.Load() {
		t.Errorf("a Prepared of another scenario was played (%t) or left open (%t)", h == other.p.hist, !other.taken.Load())
	}
	for _, r := range other.p.replicas {
		if r.proc != nil && r.proc.Alive() {
			t.Errorf("replica %s of the unplayed Prepared still runs", r.name)
		}
	}
}

// probeLifecycle opens what the prepared-platform tests play the lifecycle scenario of the probe provider
// with: its options with egress control (declared services started, refusing) and the run's fork servers,
// all closed when the test ends.
func probeLifecycle(t *testing.T) (context.Context, *Scenario, Options) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	t.Cleanup(cancel)
	sc, err := ParseScenario("lifecycle.yaml", []byte(lifecycleYAML))
	if err != nil {
		t.Fatal(err)
	}
	dir, _ := filepath.Abs(filepath.Join("testdata", "providers", "probe"))
	o := Options{Python: "python3", ProjectDir: dir, Target: "probe_provider:Probe", Paths: []string{dir}, Config: testConfig(), Limits: harness.DefaultLimits()}
	svcs, err := StartServices(ctx, nil, egress.PolicyRefuse)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svcs.Close() })
	o.Services = svcs
	hosts := NewHosts(ctx, o.Python, o.ProjectDir, sc.Seed, nil)
	t.Cleanup(func() { hosts.Close() })
	o.Hosts = hosts
	return ctx, sc, o
}
