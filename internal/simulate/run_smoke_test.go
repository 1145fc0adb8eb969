package simulate

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/astrabox-dev/astrabox/internal/harness"
)

func testConfig() map[string]any {
	var cfg map[string]any
	_ = json.Unmarshal([]byte(`{"agent": {"model": "m1", "instructions": "be kind"}, "packages": [{"name": "tools", "source": "git+https://example.invalid/tools.git"}], "skills": ["summarize"], "secrets": {"model_api_key": "astx_secret_0123456789"}}`), &cfg)
	return cfg
}

func runFixture(t *testing.T, provider, scenarioFile string) *History {
	t.Helper()
	sc, err := LoadScenario(filepath.Join("testdata", scenarioFile))
	if err != nil {
		t.Fatal(err)
	}
	dir, _ := filepath.Abs(filepath.Join("testdata", "providers", provider))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	target := map[string]string{"basic": "basic_provider:Basic"}[provider]
	h, err := Run(ctx, sc, Options{Python: "python3", ProjectDir: dir, Target: target, Paths: []string{dir}, Config: testConfig(), Limits: harness.DefaultLimits()})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestSmoke(t *testing.T) {
	h := runFixture(t, "basic", "smoke.yaml")
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", " ")
	for _, e := range h.Events {
		t.Logf("%3d step %d %-8s %-3s %s %s", e.Seq, e.Step, e.Kind, e.Replica, e.Code, e.Message)
	}
}
