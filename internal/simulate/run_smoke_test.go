package simulate

import (
	"encoding/json"
	"path/filepath"
	"testing"
)

func testConfig() map[string]any {
	var cfg map[string]any
	_ = json.Unmarshal([]byte(`{"agent": {"model": "m1", "instructions": "be kind"}, "packages": [{"name": "tools", "source": "git+https://example.invalid/tools.git"}], "skills": ["summarize"], "secrets": {"model_api_key": "astx_secret_0123456789"}}`), &cfg)
	return cfg
}

// runFixture plays a scenario file of testdata against one of the example providers (see testProviders).
func runFixture(t *testing.T, provider, scenarioFile string) *History {
	t.Helper()
	sc, err := LoadScenario(filepath.Join("testdata", scenarioFile))
	if err != nil {
		t.Fatal(err)
	}
	h, err := runParsed(sc, provider)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestSmoke plays testdata/smoke.yaml against the basic provider: one pass over the main operations.
func TestSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python (skipped under -short)")
	}
	t.Parallel()
	h := runFixture(t, "basic", "smoke.yaml")
	dumpOnFailure(t, h)
	if h.Provider != "basic" || h.Aborted != "" {
		t.Fatalf("provider %q aborted %q", h.Provider, h.Aborted)
	}
	for _, s := range []string{"s1", "s2"} {
		if len(engineStarts(h, s)) != 1 {
			t.Errorf("session %s was not activated", s)
		}
	}
	if n := len(callsIn(h, 3, "prepare_turn")); n < 2 {
		t.Errorf("a write live for 900 s with 300 s validity made %d prepare_turn calls", n)
	}
	if len(writes(h, "a1")) != 1 {
		t.Errorf("a1 written %d times across its retry", len(writes(h, "a1")))
	}
	if !hasCode(h, 7, "CONSOLE_SEND_BLOCKED") {
		t.Errorf("console send while consent is pending: %v", codes(h, 7))
	}
	if len(callsIn(h, 8, "perform_user_action")) != 1 {
		t.Errorf("the offered operation was not performed")
	}
}
