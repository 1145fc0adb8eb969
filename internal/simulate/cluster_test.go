package simulate

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/astrabox-dev/astrabox/internal/harness"
)

// TestClusterReuseGivesTheSameHistory runs one scenario cold, then twice on a warm cluster, and requires the
// three histories to be byte-identical: reuse must not change what a scenario observes.
func TestClusterReuseGivesTheSameHistory(t *testing.T) {
	sc, err := LoadScenario(filepath.Join("testdata", "smoke.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dir, _ := filepath.Abs(filepath.Join("testdata", "providers", "basic"))
	o := Options{Python: "python3", ProjectDir: dir, Target: "basic_provider:Basic", Paths: []string{dir}, Config: testConfig(), Limits: harness.DefaultLimits()}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cold, err := Run(ctx, sc, o)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(cold)
	c, err := NewCluster(ctx, o, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i := 0; i < 2; i++ {
		warm := o
		warm.Cluster = c
		h, err := Run(ctx, sc, warm)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := json.Marshal(h)
		if !bytes.Equal(got, want) {
			at := 0
			for at < len(got) && at < len(want) && got[at] == want[at] {
				at++
			}
			lo := max(0, at-200)
			t.Fatalf("warm run %d differs from the cold run at byte %d:\ncold ...%s\nwarm ...%s", i+1, at, want[lo:min(len(want), at+200)], got[lo:min(len(got), at+200)])
		}
	}
}
