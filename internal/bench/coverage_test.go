package bench

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"syscall"
	"testing"
	"time"

	"github.com/astrabox-dev/astrabox/internal/conformance"
)

// cpuTime is the CPU time, user and system, of this process and of every descendant it (or a descendant that
// was itself reaped) waited for: the fork server reaps the replicas, and the run reaps the fork server.
func cpuTime() time.Duration {
	var self, kids syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &kids)
	tv := func(t syscall.Timeval) time.Duration { return time.Duration(t.Nano()) }
	return tv(self.Utime) + tv(self.Stime) + tv(kids.Utime) + tv(kids.Stime)
}

func medianDuration(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

// BenchmarkCoverageCost measures the default suite on the reference provider with coverage of the provider's
// code off and on, for each CPython under pyenv (3.9-3.11 measure with a trace function, 3.12+ with
// sys.monitoring). Runs alternate off, on, off, on... so that the machine's load hits both alike; the figures
// are the medians and their ratio (targets: at most 1.10 on 3.12+, at most 1.30 on 3.9-3.11).
func BenchmarkCoverageCost(b *testing.B) {
	for _, v := range []string{"3.9.18", "3.11.7", "3.12.1", "3.13.0"} {
		py := filepath.Join("/root/.pyenv/versions", v, "bin", "python3")
		if _, err := os.Stat(py); err != nil {
			continue
		}
		b.Run("python="+v, func(b *testing.B) {
			var times, cpu [2][]time.Duration
			for i := 0; i < b.N; i++ {
				for k, on := range []bool{false, true} {
					on := on
					cpu0 := cpuTime()
					start := time.Now()
					rep, err := conformance.Run(context.Background(), conformance.Options{Project: reference(), Python: py, Getenv: os.Getenv, Coverage: &on})
					if err != nil {
						b.Fatal(err)
					}
					times[k] = append(times[k], time.Since(start))
					cpu[k] = append(cpu[k], cpuTime()-cpu0)
					if rep.Summary.Failed > 0 || (rep.Coverage != nil) != on {
						b.Fatalf("python %s coverage %v: %d failed, coverage %v", v, on, rep.Summary.Failed, rep.Coverage != nil)
					}
				}
			}
			off, on := medianDuration(times[0]), medianDuration(times[1])
			b.ReportMetric(float64(off.Milliseconds()), "ms/off")
			b.ReportMetric(float64(on.Milliseconds()), "ms/on")
			b.ReportMetric(float64(on)/float64(off), "wall-ratio")
			// CPU time (the kit and every harness process it reaped) is what coverage adds; wall time on a
			// shared machine mostly measures the neighbours.
			b.ReportMetric(float64(medianDuration(cpu[1]))/float64(medianDuration(cpu[0])), "cpu-ratio")
		})
	}
}
