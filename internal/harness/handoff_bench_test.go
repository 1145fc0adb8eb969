package harness

import (
	"bufio"
	"sort"
	"syscall"
	"testing"
	"time"

	"github.com/astrabox-dev/astrabox/internal/testutil"
)

// BenchmarkReplyHandOff measures what the kit's way of waiting for a reply costs, against the same echo
// process (testutil.EchoScript, the round-trip benchmarks' floor; it answers with JSON, which both ways below
// pay alike): "direct" is the calling goroutine reading the reply pipe itself (the bare echo of
// BenchmarkCallbackOverhead); "handoff" is a reader goroutine reading it and handing each frame to the waiting
// caller over a channel, as Process.readLoop and awaitReply do. The two alternate in blocks of 500 calls, so that
// the load of a shared machine falls on both; reported are the median round trip of each and the kit's CPU per
// call (getrusage: the scheduler's spinning after a hand-off counts). Not a test of the harness: a measurement
// for docs/performance.md ("Callback round trip, third round"), the figure a design in which the caller reads
// its own reply would save.
func BenchmarkReplyHandOff(b *testing.B) {
	echo := testutil.StartPipeEcho(b)
	defer echo.Stop()
	reqW, repR := echo.Req, echo.Rep

	frame, err := encodeFrame(callMsg{Kind: "call", ID: 1, Method: "plan", Args: map[string]any{"config": map[string]any{}}, TimeoutS: 5})
	if err != nil {
		b.Fatal(err)
	}
	r := bufio.NewReaderSize(repR, 64<<10)
	direct := func() {
		if _, err := reqW.Write(frame); err != nil {
			b.Fatal(err)
		}
		if _, err := readBody(r); err != nil {
			b.Fatal(err)
		}
	}
	// The reader goroutine starts after the direct calls of each block and ends before the next block's.
	handOff := func(n int, record func(time.Duration)) {
		replies := make(chan []byte, 8)
		go func() {
			for i := 0; i < n; i++ {
				body, err := readBody(r)
				if err != nil {
					close(replies)
					return
				}
				replies <- body
			}
		}()
		for i := 0; i < n; i++ {
			start := time.Now()
			if _, err := reqW.Write(frame); err != nil {
				b.Fatal(err)
			}
			if _, ok := <-replies; !ok {
				b.Fatal("echo: reply pipe ended")
			}
			record(time.Since(start))
		}
	}
	for i := 0; i < 200; i++ { // warm up
		direct()
	}
	const block, blocks = 500, 6
	var dDurs, hDurs []time.Duration
	var dCPU, hCPU time.Duration
	b.ResetTimer()
	for k := 0; k < blocks; k++ {
		c0 := handOffKitCPU()
		for i := 0; i < block; i++ {
			start := time.Now()
			direct()
			dDurs = append(dDurs, time.Since(start))
		}
		c1 := handOffKitCPU()
		handOff(block, func(d time.Duration) { hDurs = append(hDurs, d) })
		c2 := handOffKitCPU()
		dCPU += c1 - c0
		hCPU += c2 - c1
	}
	b.StopTimer()
	median := func(d []time.Duration) float64 {
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		return float64(d[len(d)/2].Nanoseconds()) / 1e3
	}
	calls := float64(block * blocks)
	b.ReportMetric(median(dDurs), "µs/direct")
	b.ReportMetric(median(hDurs), "µs/handoff")
	b.ReportMetric(float64(dCPU.Nanoseconds())/1e3/calls, "µs-cpu/direct")
	b.ReportMetric(float64(hCPU.Nanoseconds())/1e3/calls, "µs-cpu/handoff")
}

func handOffKitCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
