package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"runtime"
	"sort"
	"testing"
	"time"

	"github.com/astrabox-dev/astrabox/internal/harness"
)

// BenchmarkLargeMaterial measures what one prepare_session returning a large file costs the kit (issue 25.4):
// the median round trip of the call (the harness encodes the material, Go reads and decodes it), the time from
// the call to the harness's "returned" message is the provider's and is not in it as a deadline, and the Go
// heap a reply needs (allocated bytes per call over the material's size: the copies the kit makes).
func BenchmarkLargeMaterial(b *testing.B) {
	for _, mib := range []int{4, 16} {
		b.Run(fmt.Sprintf("%dMiB", mib), func(b *testing.B) {
			dir, _ := filepath.Abs(filepath.Join("testdata", "largematerial"))
			ctx := context.Background()
			size := mib << 20
			p, err := harness.Start(ctx, harness.Options{Python: "python3", ProjectDir: dir, Replica: "bench", Limits: harness.DefaultLimits(),
				Env: []string{fmt.Sprintf("ASTRABOX_BENCH_MATERIAL_BYTES=%d", size)}})
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close()
			if _, err := p.Load(ctx, harness.LoadArgs{Target: "large_material:Provider", Paths: []string{dir}, ProjectRoot: dir}); err != nil {
				b.Fatal(err)
			}
			args := map[string]any{"context": map[string]any{
				"session_id": "s-1", "agent_id": "a-1", "principal_id": "u-1", "config": map[string]any{},
				"runtime_generation": "g-1", "sandbox_id": "sb-1", "trigger": "cold_start", "file_paths_dir": "/home/agent/.astrabox/runtime/s-1",
				"workload_identity": map[string]any{"subject": "wl", "token": "wl-token-0123456789"},
			}}
			n := max(b.N, 10)
			durs := make([]time.Duration, 0, n)
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			b.ResetTimer()
			for i := 0; i < n; i++ {
				start := time.Now()
				rep, err := p.Call(ctx, "prepare_session", args, 30*time.Second)
				if err != nil || !rep.OK {
					b.Fatalf("prepare_session: %v %+v", err, rep)
				}
				var v harness.Result
				if err := json.Unmarshal(rep.Value, &v); err != nil || len(v.Files) != 1 || len(v.Files[0].Content) != size {
					b.Fatalf("decode: %v", err)
				}
				durs = append(durs, time.Since(start))
			}
			b.StopTimer()
			runtime.ReadMemStats(&after)
			sort.Slice(durs, func(i, j int) bool { return durs[i] < durs[j] })
			b.ReportMetric(float64(durs[len(durs)/2].Milliseconds()), "ms/call")
			b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(n)/float64(size), "copies/call")
		})
	}
}
