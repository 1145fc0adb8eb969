package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/astrabox-dev/astrabox/internal/testutil"

	"github.com/astrabox-dev/astrabox/internal/conformance"
	"github.com/astrabox-dev/astrabox/internal/explore"
	"github.com/astrabox-dev/astrabox/internal/harness"
)

func reference() string {
	abs, _ := filepath.Abs(filepath.Join("..", "..", "examples", "providers", "reference"))
	return abs
}

// minimal is the corpus's provider that overrides nothing and makes no I/O: exploring it measures the kit.
func minimal() string {
	abs, _ := filepath.Abs(filepath.Join("..", "..", "testdata", "providers", "correct", "minimal"))
	return abs
}

func env(b *testing.B, project string, seed int64) (*conformance.Env, *conformance.Target) {
	b.Helper()
	ctx := context.Background()
	t, err := conformance.Resolve(ctx, conformance.Options{Project: project, Python: "python3", Getenv: os.Getenv})
	if err != nil {
		b.Fatal(err)
	}
	info, _, err := conformance.Inspect(ctx, t)
	if err != nil || info == nil {
		b.Fatalf("inspect: %v", err)
	}
	e, err := conformance.NewEnv(t, info, seed)
	if err != nil {
		b.Fatal(err)
	}
	return e, t
}

// BenchmarkDefaultSuite measures the wall time of `astrabox conformance run` on the reference provider, from
// discovery to report (target: at most 2 s on a 2-core machine).
func BenchmarkDefaultSuite(b *testing.B) {
	floor := interpreterStart(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rep, err := conformance.Run(context.Background(), conformance.Options{Project: reference(), Python: "python3", Getenv: os.Getenv})
		if err != nil {
			b.Fatal(err)
		}
		if rep.Summary.Failed > 0 {
			b.Fatalf("the reference provider failed %d checks", rep.Summary.Failed)
		}
	}
	b.StopTimer()
	perSuite := b.Elapsed() / time.Duration(b.N)
	floor = min(floor, interpreterStart(b))
	b.ReportMetric(float64(perSuite.Milliseconds()), "ms/suite")
	b.ReportMetric(float64(floor.Microseconds())/1000, "ms/interpreter-start")
	b.ReportMetric(perSuite.Seconds()/floor.Seconds(), "interpreter-starts/suite")
}

// turnArgs are prepare_turn arguments for the reference provider that never touch the double (a user-action
// refusal needs no network); the benchmark measures the kit, not the provider's I/O.
func planArgs() map[string]any {
	return map[string]any{"config": conformance.DefaultConfig(1)}
}

// BenchmarkCallbackOverhead measures one plan round trip through the harness and subtracts the floor: the same
// method called in a plain Python loop in one process. The metric is the kit's median overhead per callback
// (target: at most 100 µs).
func BenchmarkCallbackOverhead(b *testing.B) {
	ctx := context.Background()
	p, err := harness.Start(ctx, harness.Options{Python: "python3", ProjectDir: reference(), Replica: "bench", Limits: harness.DefaultLimits()})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	if _, err := p.Load(ctx, harness.LoadArgs{Target: "reference_provider.provider:ReferenceProvider", Paths: []string{filepath.Join(reference(), "src")}, ProjectRoot: reference()}); err != nil {
		b.Fatal(err)
	}
	args := planArgs()
	for i := 0; i < 50; i++ { // warm up
		p.Call(ctx, "plan", args, 5*time.Second)
	}
	n := max(b.N, 200)
	durs := make([]time.Duration, 0, n)
	b.ResetTimer()
	for i := 0; i < n; i++ {
		start := time.Now()
		rep, err := p.Call(ctx, "plan", args, 5*time.Second)
		if err != nil || !rep.OK {
			b.Fatalf("plan: %v", err)
		}
		durs = append(durs, time.Since(start))
	}
	b.StopTimer()
	sort.Slice(durs, func(i, j int) bool { return durs[i] < durs[j] })
	median := durs[len(durs)/2]
	floor := pythonFloor(b)
	b.ReportMetric(float64(median.Microseconds()), "µs/roundtrip")
	b.ReportMetric(floor, "µs/floor")
	b.ReportMetric(float64(median.Microseconds())-floor, "µs/overhead")
	b.ReportMetric(float64(pipeEcho(b, args).Microseconds()), "µs/echo")
}

// BenchmarkReplicaStart measures starting one replica process and loading the reference provider into it,
// started as its own interpreter and forked from a fork server: what every host loss costs (exploration
// replaces lost replicas with standby processes started this way).
func BenchmarkReplicaStart(b *testing.B) {
	ctx := context.Background()
	for _, mode := range []string{"interpreter", "forked"} {
		b.Run(mode, func(b *testing.B) {
			var z *harness.Zygote
			if mode == "forked" {
				var err error
				if z, err = harness.StartZygote(ctx, "python3", reference()); err != nil {
					b.Fatal(err)
				}
				defer z.Close()
			}
			var durs []time.Duration
			for i := 0; i < max(b.N, 10); i++ {
				start := time.Now()
				p, err := harness.Start(ctx, harness.Options{Python: "python3", ProjectDir: reference(), Replica: "bench", Limits: harness.DefaultLimits(), Zygote: z})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := p.Load(ctx, harness.LoadArgs{Target: "reference_provider.provider:ReferenceProvider", Paths: []string{filepath.Join(reference(), "src")}, ProjectRoot: reference()}); err != nil {
					b.Fatal(err)
				}
				durs = append(durs, time.Since(start))
				p.Close()
			}
			sort.Slice(durs, func(i, j int) bool { return durs[i] < durs[j] })
			b.ReportMetric(float64(durs[len(durs)/2].Microseconds())/1000, "ms/start")
		})
	}
}

// pipeEcho is the median round trip of the same call message through a bare Python echo process over two
// pipes: the machine's floor for any design that runs the provider in its own process.
func pipeEcho(b *testing.B, args any) time.Duration {
	echo := testutil.StartPipeEcho(b)
	defer echo.Stop()
	reqW, repR := echo.Req, echo.Rep
	durs := make([]time.Duration, 0, 2000)
	for i := 0; i < 2200; i++ {
		start := time.Now()
		if err := harness.WriteFrame(reqW, map[string]any{"kind": "call", "id": i, "method": "plan", "args": args}); err != nil {
			b.Fatalf("echo: %v", err)
		}
		if _, err := harness.ReadFrame(repR); err != nil {
			b.Fatalf("echo: %v", err)
		}
		if i >= 200 {
			durs = append(durs, time.Since(start))
		}
	}
	sort.Slice(durs, func(i, j int) bool { return durs[i] < durs[j] })
	return durs[len(durs)/2]
}

// pythonFloor times the provider's plan in a plain Python loop (median of 2,000 calls), in microseconds.
func pythonFloor(b *testing.B) float64 {
	script := `
import sys, time, statistics
sys.path.insert(0, sys.argv[1])
from reference_provider.provider import ReferenceProvider
import types
p = ReferenceProvider()
cfg = types.MappingProxyType({"agent": {"display_name": "x", "model": "m", "instructions": "i"}, "deployment": {"base_url": "u", "audience": "a"}, "packages": [], "skills": [], "secrets": {}})
ts = []
for _ in range(2000):
    t = time.perf_counter(); p.plan(config=cfg); ts.append(time.perf_counter() - t)
print(statistics.median(ts) * 1e6)
`
	cmd := exec.Command("python3", "-c", script, filepath.Join(reference(), "src"))
	cmd.Env = append(os.Environ(), "PYTHONPATH="+mustSDK(b))
	out, err := cmd.CombinedOutput()
	if err != nil {
		b.Fatalf("python floor: %v\n%s", err, out)
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(string(out)), 64)
	if err != nil {
		b.Fatalf("python floor: %q", out)
	}
	return v
}

func mustSDK(b *testing.B) string {
	dir, err := harness.SDKDir()
	if err != nil {
		b.Fatal(err)
	}
	return dir
}

// benchExplore explores n scenarios with jobs worker sets and reports callbacks per second.
func benchExplore(b *testing.B, project string, jobs, n int) *explore.Result {
	e, _ := env(b, project, 1)
	ctx := context.Background()
	w, err := e.NewWorkers(ctx, jobs, 3)
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	res, err := explore.Explore(ctx, e, w, explore.Options{N: n, Seed: 1, Jobs: jobs, FailuresDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	if len(res.Failures) > 0 {
		b.Fatalf("the reference provider failed under exploration: %+v", res.Failures[0])
	}
	return res
}

// BenchmarkExploreThroughput reports callbacks per second with 1 and 2 worker sets (target: at least 1,000 per
// worker, scaling near-linearly), on the reference provider (whose callbacks make HTTP requests to the double
// from worker threads) and on the minimal provider (no I/O: what the kit itself sustains). The floor, measured
// in the same run before and after each exploration, is a bare interpreter start (`python3 -c pass`, median):
// callbacks per interpreter start is the rate in units of this machine's speed at the time, which compares
// across runs on a machine whose speed varies.
func BenchmarkExploreThroughput(b *testing.B) {
	for _, prov := range []struct{ name, dir string }{{"reference", reference()}, {"minimal", minimal()}} {
		for _, jobs := range []int{1, 2} {
			b.Run(fmt.Sprintf("provider=%s/jobs=%d", prov.name, jobs), func(b *testing.B) {
				var calls int64
				var elapsed time.Duration
				floors := []time.Duration{interpreterStart(b)}
				for i := 0; i < b.N; i++ {
					res := benchExplore(b, prov.dir, jobs, 100)
					calls += res.Callbacks
					elapsed += res.Elapsed
					floors = append(floors, interpreterStart(b))
				}
				floor := medianDuration(floors)
				rate := float64(calls) / elapsed.Seconds()
				b.ReportMetric(rate, "callbacks/s")
				b.ReportMetric(rate/float64(jobs), "callbacks/s/worker")
				b.ReportMetric(float64(floor.Microseconds())/1000, "ms/interpreter-start")
				b.ReportMetric(rate*floor.Seconds(), "callbacks/interpreter-start")
			})
		}
	}
}

// interpreterStart is the median wall time of ten bare interpreter starts (`python3 -c pass`): the floor the
// exploration figures are given against. It is the `python3` of PATH as the benchmark binary found it
// (testutil.PathAsFound), before the package's TestMain put the interpreter behind pyenv's shim first: on a
// machine with pyenv the floor stays the shim's start, the unit docs/performance.md and issue 24 give every
// ratio in.
func interpreterStart(b *testing.B) time.Duration {
	python, err := lookPathIn("python3", testutil.PathAsFound())
	if err != nil {
		b.Fatal(err)
	}
	var durs []time.Duration
	for i := 0; i < 10; i++ {
		start := time.Now()
		if out, err := exec.Command(python, "-c", "pass").CombinedOutput(); err != nil {
			b.Fatalf("python3 -c pass: %v\n%s", err, out)
		}
		durs = append(durs, time.Since(start))
	}
	return medianDuration(durs)
}

// lookPathIn finds an executable named name in the directories of path, as a shell with that PATH would.
func lookPathIn(name, path string) (string, error) {
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("no executable %s on PATH %q", name, path)
}

// BenchmarkExploreMemory reports the kit's memory while exploring 1,000 and 10,000 scenarios: it must stay
// flat, not grow with N. Two figures are sampled every 50 ms: the peak of the live heap (what the last
// garbage collection found reachable: what the kit holds) and the peak of the heap in use (live plus garbage
// not yet collected, which depends on the collector's pacing more than on N). Run it with
// ASTRABOX_BENCH_MEMORY=1 (it takes minutes).
func BenchmarkExploreMemory(b *testing.B) {
	if os.Getenv("ASTRABOX_BENCH_MEMORY") == "" {
		b.Skip("set ASTRABOX_BENCH_MEMORY=1 to explore 10,000 scenarios")
	}
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("scenarios=%d", n), func(b *testing.B) {
			runtime.GC()
			stop := make(chan struct{})
			type peaks struct{ live, inuse uint64 }
			out := make(chan peaks)
			go func() {
				sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
				var m runtime.MemStats
				var hi peaks
				for {
					select {
					case <-stop:
						out <- hi
						return
					case <-time.After(50 * time.Millisecond):
						metrics.Read(sample)
						if sample[0].Value.Kind() == metrics.KindUint64 {
							hi.live = max(hi.live, sample[0].Value.Uint64())
						}
						runtime.ReadMemStats(&m)
						hi.inuse = max(hi.inuse, m.HeapInuse)
					}
				}
			}()
			benchExplore(b, reference(), 2, n)
			close(stop)
			hi := <-out
			b.ReportMetric(float64(hi.live)/(1<<20), "MiB-peak-live")
			b.ReportMetric(float64(hi.inuse)/(1<<20), "MiB-peak-heap")
		})
	}
}
