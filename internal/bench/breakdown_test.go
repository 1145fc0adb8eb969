package bench

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/astrabox-dev/astrabox/internal/double"
	"github.com/astrabox-dev/astrabox/internal/explore"
	"github.com/astrabox-dev/astrabox/internal/harness"
	"github.com/astrabox-dev/astrabox/internal/simulate"
)

// onCPU is the time a live process (or thread group leader) has spent on a CPU, from /proc/<pid>/schedstat
// (nanoseconds: precise, unlike stat's clock ticks); 0 when the process is gone.
func onCPU(pid int) time.Duration {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/schedstat")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(raw))
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseInt(f[0], 10, 64)
	return time.Duration(v)
}

// statOf reads a live process's parent and minor page faults from /proc/<pid>/stat.
func statOf(pid int) (ppid int, faults int64) {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0
	}
	s := string(raw)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:]) // f[0] is field 3 (state)
	pp, _ := strconv.Atoi(f[4-3])
	mf, _ := strconv.ParseInt(f[10-3], 10, 64)
	return pp, mf
}

// BenchmarkReplicaBreakdown says where a fresh forked replica's cost goes, phase by phase, for the minimal
// and the reference provider. Per replica (start, load, close, one at a time from one fork server):
//
//   - server: the fork server's CPU (it forks the harness, reaps it and reports its exit);
//   - harness-start: the harness's CPU and page faults from its fork to its hello (the fork's copy-on-write
//     faults, the descriptors, the environment, the harness's set-up: limits, observer, event loop);
//   - load: the harness's CPU and faults serving `load` (importing and instantiating the provider);
//   - supervisor: the supervisor's CPU and faults up to the close, when the harness's parent is not the server
//     (0 since forked harnesses have no supervisor; kept so that older runs compare);
//   - close: what is left of the children's CPU once the harness exited (the harness's end), from the server's
//     reaped-children counter;
//   - kit: the Go side (pipes, goroutines, the memory poll);
//
// and, once per run, the floor (`python3 -c pass`, median of ten) and a deployment double's start and close
// (the other process-free thing each scenario gets fresh). CPU is read from /proc/<pid>/schedstat, which
// counts nanoseconds, so it stays comparable while the wall time swings with the machine's load.
func BenchmarkReplicaBreakdown(b *testing.B) {
	ctx := context.Background()
	for _, prov := range []struct {
		name, dir string
		load      func(dir string) harness.LoadArgs
	}{
		{"minimal", minimal(), func(dir string) harness.LoadArgs {
			return harness.LoadArgs{Target: "minimal_provider:Provider", Paths: []string{dir}, ProjectRoot: dir}
		}},
		{"reference", reference(), func(dir string) harness.LoadArgs {
			return harness.LoadArgs{Target: "reference_provider.provider:ReferenceProvider", Paths: []string{dir + "/src"}, ProjectRoot: dir}
		}},
	} {
		b.Run("provider="+prov.name, func(b *testing.B) {
			z, err := harness.StartZygote(ctx, "python3", prov.dir)
			if err != nil {
				b.Fatal(err)
			}
			defer z.Close()
			n := max(b.N, 40)
			args := prov.load(prov.dir)
			var server, hStart, hLoad, sup time.Duration
			var fStart, fLoad, fSup int64
			before, kit := readCounters(b, z.PID()), goCPU()
			for i := 0; i < n; i++ {
				s0 := onCPU(z.PID())
				p, err := harness.Start(ctx, harness.Options{Python: "python3", ProjectDir: prov.dir, Replica: "bench", Limits: harness.DefaultLimits(), Zygote: z})
				if err != nil {
					b.Fatal(err)
				}
				server += onCPU(z.PID()) - s0
				h := p.PID()
				spid, _ := statOf(h)
				c1 := onCPU(h)
				_, f1 := statOf(h)
				hStart += c1
				fStart += f1
				if r, err := p.Load(ctx, args); err != nil || !r.OK {
					b.Fatalf("load: %v %+v", err, r)
				}
				c2 := onCPU(h)
				_, f2 := statOf(h)
				hLoad += c2 - c1
				fLoad += f2 - f1
				if spid != z.PID() { // a supervisor between the server and the harness (none since the harness is its own subreaper)
					sup += onCPU(spid)
					_, sf := statOf(spid)
					fSup += sf
				}
				p.Close()
			}
			kit = goCPU() - kit
			after := readCounters(b, z.PID())
			tick := 10 * time.Millisecond // USER_HZ is 100 on Linux
			children := time.Duration(after.childTicks-before.childTicks) * tick
			per := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(n) }
			perN := func(v int64) float64 { return float64(v) / float64(n) }
			b.ReportMetric(per(server), "ms-cpu/server")
			b.ReportMetric(per(hStart), "ms-cpu/harness-start")
			b.ReportMetric(perN(fStart), "faults/harness-start")
			b.ReportMetric(per(hLoad), "ms-cpu/load")
			b.ReportMetric(perN(fLoad), "faults/load")
			b.ReportMetric(per(sup), "ms-cpu/supervisor")
			b.ReportMetric(perN(fSup), "faults/supervisor")
			b.ReportMetric(per(children-hStart-hLoad-sup), "ms-cpu/close")
			b.ReportMetric(per(children), "ms-cpu/children")
			b.ReportMetric(perN(after.childFaults-before.childFaults), "faults/children")
			b.ReportMetric(per(kit), "ms-cpu/kit")
			b.ReportMetric(float64(interpreterStart(b).Microseconds())/1000, "ms/interpreter-start")
		})
	}
	b.Run("double", func(b *testing.B) {
		n := max(b.N, 200)
		kit := goCPU()
		start := time.Now()
		for i := 0; i < n; i++ {
			d, err := double.Start(double.Options{})
			if err != nil {
				b.Fatal(err)
			}
			d.Close()
		}
		b.ReportMetric(float64(time.Since(start).Microseconds())/1000/float64(n), "ms/double")
		b.ReportMetric(float64((goCPU()-kit).Microseconds())/1000/float64(n), "ms-cpu/double")
	})
}

// BenchmarkScenarioCost explores 100 scenarios of the minimal provider with one job, with two, and with two
// whose slots have fork servers of their own (Workers.ForkServersPerSlot), and splits the CPU of a scenario
// between the kit (Go) and its replica processes (fork servers, supervisors, harnesses), next to its wall
// time: whether a scenario is bound by CPU or by waiting. Per scenario it also reports the harnesses forked,
// their page faults (and their servers'), and the machine's cross-CPU interrupts (function calls, which carry
// TLB shootdowns under a hypervisor, and reschedules: machine-wide, so only meaningful on a quiet machine).
// The floor is the same run's interpreter start.
func BenchmarkScenarioCost(b *testing.B) {
	for _, c := range []struct {
		jobs    int
		perSlot bool
	}{{1, false}, {2, false}, {2, true}} {
		jobs, name := c.jobs, fmt.Sprintf("jobs=%d", c.jobs)
		if c.perSlot {
			name += ",servers=per-slot"
		}
		b.Run(name, func(b *testing.B) {
			var scen int
			var wall, kitCPU, replCPU time.Duration
			var forks, faults, calls, resched int64
			for i := 0; i < b.N; i++ {
				e, _ := env(b, minimal(), 1)
				ctx := context.Background()
				hosts := simulate.NewHosts(ctx, "python3", e.Sim.ProjectDir, 1, nil)
				e.Sim.Hosts = hosts
				names := []string{simulate.ReplicaName(1), simulate.ReplicaName(2), simulate.ReplicaName(3)}
				hosts.Prestart(names...)
				if c.perSlot { // started before the measurement, as the first slot's are
					for j := 1; j < jobs; j++ {
						hosts.Slot(j).Prestart(names...)
					}
				}
				zs := hosts.ForkServers()
				if len(zs) < len(names) {
					b.Fatal("no fork server")
				}
				var before []procCounters
				for _, z := range zs {
					before = append(before, readCounters(b, z.PID()))
				}
				cal0, res0 := ipis(b)
				w, err := e.NewWorkers(ctx, jobs, 3)
				if err != nil {
					b.Fatal(err)
				}
				if c.perSlot {
					w.ForkServersPerSlot()
				}
				kit := goCPU()
				res, err := explore.Explore(ctx, e, w, explore.Options{N: 100, Seed: 1, Jobs: jobs, FailuresDir: b.TempDir()})
				if err != nil {
					b.Fatal(err)
				}
				w.Close()
				kitCPU += goCPU() - kit
				if got := len(hosts.ForkServers()); got != len(zs) {
					b.Fatalf("%d fork servers ran, %d measured", got, len(zs))
				}
				for j, z := range zs {
					a := readCounters(b, z.PID())
					replCPU += time.Duration(a.ticks+a.childTicks-before[j].ticks-before[j].childTicks) * 10 * time.Millisecond
					faults += a.faults + a.childFaults - before[j].faults - before[j].childFaults
					forks += z.Forks()
				}
				cal1, res1 := ipis(b)
				calls, resched = calls+cal1-cal0, resched+res1-res0
				hosts.Close()
				scen += res.Scenarios
				wall += res.Elapsed
			}
			per := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(scen) }
			b.ReportMetric(per(wall), "ms/scenario")
			b.ReportMetric(per(kitCPU), "ms-cpu-kit/scenario")
			b.ReportMetric(per(replCPU), "ms-cpu-replicas/scenario")
			b.ReportMetric(float64(forks)/float64(scen), "forks/scenario")
			b.ReportMetric(float64(faults)/float64(scen), "faults-replicas/scenario")
			b.ReportMetric(float64(calls)/float64(scen), "ipi-call/scenario")
			b.ReportMetric(float64(resched)/float64(scen), "ipi-resched/scenario")
			b.ReportMetric(float64(interpreterStart(b).Microseconds())/1000, "ms/interpreter-start")
		})
	}
}

// ipis are the machine's function-call and rescheduling interrupts so far, over all CPUs, from
// /proc/interrupts (CAL and RES): the cross-CPU work (TLB shootdowns under a hypervisor, wake-ups on the other
// CPU) that two processes running at once can cost each other.
func ipis(b *testing.B) (calls, resched int64) {
	raw, err := os.ReadFile("/proc/interrupts")
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || (f[0] != "CAL:" && f[0] != "RES:") {
			continue
		}
		var n int64
		for _, v := range f[1:] {
			x, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				break
			}
			n += x
		}
		if f[0] == "CAL:" {
			calls = n
		} else {
			resched = n
		}
	}
	return calls, resched
}
