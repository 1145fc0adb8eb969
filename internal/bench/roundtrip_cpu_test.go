package bench

import (
	"context"
	"path/filepath"
	"sort"
	"syscall"
	"testing"
	"time"

	"github.com/astrabox-dev/astrabox/internal/testutil"

	"github.com/astrabox-dev/astrabox/internal/harness"
)

// roundTripCalls is how many calls BenchmarkCallbackCPU measures on each side per -benchtime repetition,
// after 200 warm ones.
const roundTripCalls = 3000

// kitCPU is the CPU the test process (the kit) has used so far, user and system, from getrusage.
func kitCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// cpuPerCall is what one side of BenchmarkCallbackCPU measured: CPU per call in the child (its schedstat) and
// in the kit (getrusage, the Go scheduler's spinning included), and the median wall time of a round trip.
type cpuPerCall struct {
	child, kit, wall time.Duration
}

// measureCalls runs call n times after warm warm-up calls, with the child's CPU read from pid's schedstat.
func measureCalls(b *testing.B, pid, warm, n int, call func(i int)) cpuPerCall {
	for i := 0; i < warm; i++ {
		call(i)
	}
	durs := make([]time.Duration, 0, n)
	child0, kit0 := onCPU(pid), kitCPU()
	for i := 0; i < n; i++ {
		start := time.Now()
		call(warm + i)
		durs = append(durs, time.Since(start))
	}
	child, kit := onCPU(pid)-child0, kitCPU()-kit0
	if child <= 0 {
		b.Fatalf("no CPU read for process %d", pid)
	}
	sort.Slice(durs, func(i, j int) bool { return durs[i] < durs[j] })
	return cpuPerCall{child: child / time.Duration(n), kit: kit / time.Duration(n), wall: durs[len(durs)/2]}
}

// BenchmarkCallbackCPU measures the CPU of one `plan` round trip of the reference provider on both sides of
// the pipes, the harness's (its /proc/<pid>/schedstat) and the kit's (getrusage), over roundTripCalls calls,
// against the same figures for the bare pipe echo of BenchmarkCallbackOverhead (the echo process and the kit
// writing the same call message and reading a small reply). CPU leaves out the time spent waiting for a core,
// so these figures move far less with the machine's load than the wall-clock round trip does.
func BenchmarkCallbackCPU(b *testing.B) {
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
	b.ResetTimer()
	trip := measureCalls(b, p.PID(), 200, roundTripCalls*b.N, func(int) {
		rep, err := p.Call(ctx, "plan", args, 5*time.Second)
		if err != nil || !rep.OK {
			b.Fatalf("plan: %v", err)
		}
	})
	echo := echoCPU(b, args, roundTripCalls*b.N)
	b.StopTimer()
	b.ReportMetric(float64(trip.wall.Nanoseconds())/1000, "µs/roundtrip")
	b.ReportMetric(float64(trip.child.Nanoseconds())/1000, "µs-cpu/harness")
	b.ReportMetric(float64(trip.kit.Nanoseconds())/1000, "µs-cpu/kit")
	b.ReportMetric(float64(echo.wall.Nanoseconds())/1000, "µs/echo")
	b.ReportMetric(float64(echo.child.Nanoseconds())/1000, "µs-cpu/echo-process")
	b.ReportMetric(float64(echo.kit.Nanoseconds())/1000, "µs-cpu/echo-kit")
	b.ReportMetric(float64(trip.child+trip.kit)/float64(echo.child+echo.kit), "cpu-ratio")
}

// echoCPU is measureCalls over the bare pipe echo of pipeEcho.
func echoCPU(b *testing.B, args any, n int) cpuPerCall {
	echo := testutil.StartPipeEcho(b)
	defer echo.Stop()
	reqW, repR := echo.Req, echo.Rep
	return measureCalls(b, echo.Pid, 200, n, func(i int) {
		if err := harness.WriteFrame(reqW, map[string]any{"kind": "call", "id": i, "method": "plan", "args": args}); err != nil {
			b.Fatalf("echo: %v", err)
		}
		if _, err := harness.ReadFrame(repR); err != nil {
			b.Fatalf("echo: %v", err)
		}
	})
}
