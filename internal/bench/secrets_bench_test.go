package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/astrabox-dev/astrabox/internal/secrets"
	"github.com/astrabox-dev/astrabox/internal/simulate"
)

// syntheticHistory is the history of a scenario of n turns, as the simulator records it: one call event and
// one platform event per turn, each turn with its own workload identity token (a secret) in the call's
// arguments, and every tenth message quoting the token (what masking must find).
func syntheticHistory(n int) *simulate.History {
	rng := rand.New(rand.NewSource(int64(n)))
	h := &simulate.History{Scenario: fmt.Sprintf("turns-%d", n), Seed: 1, Replicas: 2, Engine: "claude-code"}
	for i := 0; i < n; i++ {
		tok := fmt.Sprintf("astx_wid_%036x", rng.Uint64())
		h.Secrets = append(h.Secrets, secrets.Secret{Value: tok, Origin: fmt.Sprintf("workload identity token of session s%d", i)})
		msg := fmt.Sprintf("prepare_turn of s%d returned RuntimeMaterials (1 file, 2 environment values)", i)
		if i%10 == 0 {
			msg += " token=" + tok
		}
		h.Events = append(h.Events,
			&simulate.Event{Seq: 2*i + 1, Step: i + 1, Kind: simulate.EventCall, Replica: "r1", Message: msg,
				Data: map[string]any{"context": map[string]any{"session_id": fmt.Sprintf("s%d", i), "workload_identity_token": tok}}},
			&simulate.Event{Seq: 2*i + 2, Step: i + 1, Kind: simulate.EventPlatform, Message: fmt.Sprintf("session s%d: turn %d delivered", i, i)})
	}
	return h
}

// BenchmarkMaskHistory measures what printing a history of n turns costs with every secret masked, text
// (each event's message) and JSON (the whole document), against the floor measured in the same run: the same
// output with no masking. The ratio must not grow with n (masking used to be quadratic: 288 s for 2,000
// turns).
func BenchmarkMaskHistory(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("turns=%d", n), func(b *testing.B) {
			h := syntheticHistory(n)
			set := &secrets.Set{}
			for _, s := range h.Secrets {
				set.Add(s.Value, s.Origin)
			}
			render := func(mask func(string) string, maskJSON func([]byte) []byte) string {
				var out bytes.Buffer
				for _, e := range h.Events {
					out.WriteString(mask(e.Message))
					out.WriteByte('\n')
				}
				raw, err := json.Marshal(h)
				if err != nil {
					b.Fatal(err)
				}
				out.Write(maskJSON(raw))
				return out.String()
			}
			plainJSON := func(raw []byte) []byte {
				var v any
				if err := json.Unmarshal(raw, &v); err != nil {
					b.Fatal(err)
				}
				out, _ := json.MarshalIndent(v, "", "  ")
				return out
			}
			var kit, floor time.Duration
			for i := 0; i < b.N; i++ {
				start := time.Now()
				render(func(s string) string { return s }, plainJSON)
				floor += time.Since(start)
				start = time.Now()
				render(set.Mask, set.MaskJSON)
				kit += time.Since(start)
			}
			if strings.Contains(render(set.Mask, set.MaskJSON), "astx_wid_") {
				b.Fatal("a token survived masking")
			}
			b.ReportMetric(float64(kit.Milliseconds())/float64(b.N), "ms/masked")
			b.ReportMetric(float64(floor.Milliseconds())/float64(b.N), "ms/floor")
			b.ReportMetric(float64(kit)/float64(floor), "x-floor")
		})
	}
}

// BenchmarkSecretMaterial measures hunting one returned material of 1, 4 and 100 MB: adding it to the secret
// set, searching a 1 MB log that does not hold it, searching the sandbox file that holds it, and masking a
// text that quotes it. The floor, measured in the same run, is one bytes.Index of the raw value over the same
// texts (the least any search must read). Memory is what the Go heap grew by while the set was built and
// used, per byte of material (it used to be about 1,000: 0.97 GB for 1 MB).
func BenchmarkSecretMaterial(b *testing.B) {
	for _, mb := range []int{1, 4, 100} {
		b.Run(fmt.Sprintf("MB=%d", mb), func(b *testing.B) {
			rng := rand.New(rand.NewSource(int64(mb)))
			material := make([]byte, mb<<20)
			rng.Read(material)
			value := string(material)
			log := strings.Repeat("INFO prepared the sandbox in 12 ms; nothing to report\n", (1<<20)/55)
			quoted := "wrote " + value + " to the cache\n"
			var kit, floor time.Duration
			var grew uint64
			for i := 0; i < b.N; i++ {
				start := time.Now()
				_ = bytes.Index([]byte(log), material)
				_ = bytes.Index(material, material)
				_ = strings.Index(quoted, value)
				floor += time.Since(start)

				runtime.GC()
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				start = time.Now()
				set := &secrets.Set{}
				set.Add(value, "material file big.bin")
				if len(set.FindString(log)) != 0 {
					b.Fatal("the log does not hold the material")
				}
				if m := set.Find(material); len(m) == 0 {
					b.Fatal("the sandbox file holds the material")
				}
				if strings.Contains(set.Mask(quoted), value[:64]) {
					b.Fatal("masking left the material")
				}
				kit += time.Since(start)
				runtime.ReadMemStats(&after)
				grew = max(grew, after.TotalAlloc-before.TotalAlloc)
				runtime.KeepAlive(set)
			}
			b.ReportMetric(float64(kit.Milliseconds())/float64(b.N), "ms/hunt")
			b.ReportMetric(float64(floor.Milliseconds())/float64(b.N), "ms/floor")
			b.ReportMetric(float64(kit)/float64(floor), "x-floor")
			b.ReportMetric(float64(grew)/float64(len(material)), "alloc-bytes/material-byte")
		})
	}
}
