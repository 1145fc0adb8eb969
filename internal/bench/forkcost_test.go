package bench

import (
	"context"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/astrabox-dev/astrabox/internal/harness"
)

// procCounters are a process's CPU time (its own and its reaped children's, in clock ticks) and minor page
// faults (its own and its reaped children's), from /proc/<pid>/stat.
type procCounters struct{ ticks, childTicks, faults, childFaults int64 }

func readCounters(b *testing.B, pid int) procCounters {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		b.Fatal(err)
	}
	s := string(raw)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:]) // f[0] is field 3 (state)
	n := func(field int) int64 { v, _ := strconv.ParseInt(f[field-3], 10, 64); return v }
	return procCounters{ticks: n(14) + n(15), childTicks: n(16) + n(17), faults: n(10), childFaults: n(11)}
}

func goCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkForkedReplicaCost forks replicas of the minimal provider from one fork server, one at a time: start,
// load, close. It reports what each costs in CPU, which varies less than wall time on a shared machine: the
// fork server's own (the fork of a supervisor), its children's (supervisor and harness, counted as the server
// reaps them), the kit's (pipes, goroutines, the memory poll, the sweep), and the minor page faults of the
// children (copy-on-write and first touches after a fork, a few microseconds each here). Wall time per start,
// load and close is reported too. The fork server's resident size bounds what a fork copies.
func BenchmarkForkedReplicaCost(b *testing.B) {
	ctx := context.Background()
	dir := minimal()
	z, err := harness.StartZygote(ctx, "python3", dir)
	if err != nil {
		b.Fatal(err)
	}
	defer z.Close()
	n := max(b.N, 40)
	load := harness.LoadArgs{Target: "minimal_provider:Provider", Paths: []string{dir}, ProjectRoot: dir}
	before, kit := readCounters(b, z.PID()), goCPU()
	var tStart, tLoad, tClose time.Duration
	for i := 0; i < n; i++ {
		t0 := time.Now()
		p, err := harness.Start(ctx, harness.Options{Python: "python3", ProjectDir: dir, Replica: "bench", Limits: harness.DefaultLimits(), Zygote: z})
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if r, err := p.Load(ctx, load); err != nil || !r.OK {
			b.Fatalf("load: %v %+v", err, r)
		}
		t2 := time.Now()
		p.Close()
		tStart, tLoad, tClose = tStart+t1.Sub(t0), tLoad+t2.Sub(t1), tClose+time.Since(t2)
	}
	kit = goCPU() - kit
	after := readCounters(b, z.PID())
	tick := float64(time.Second/time.Millisecond) / 100 // ms per clock tick (USER_HZ is 100 on Linux)
	per := func(v int64) float64 { return float64(v) / float64(n) }
	b.ReportMetric(per(after.ticks-before.ticks)*tick, "ms-cpu/server")
	b.ReportMetric(per(after.childTicks-before.childTicks)*tick, "ms-cpu/children")
	b.ReportMetric(float64(kit.Microseconds())/1000/float64(n), "ms-cpu/kit")
	b.ReportMetric(per(after.childFaults-before.childFaults), "faults/children")
	b.ReportMetric(float64(tStart.Microseconds())/1000/float64(n), "ms/start")
	b.ReportMetric(float64(tLoad.Microseconds())/1000/float64(n), "ms/load")
	b.ReportMetric(float64(tClose.Microseconds())/1000/float64(n), "ms/close")
}
