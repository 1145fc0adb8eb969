package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestProvidersDescribesTheReference(t *testing.T) {
	code, stdout, stderr := run(t, "providers", "--project", repoPath("examples/providers/reference"), "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var out struct {
		Providers []struct {
			Name       string `json:"name"`
			Loaded     bool   `json:"loaded"`
			IsSubclass bool   `json:"is_subclass"`
			Provider   string `json:"provider_name"`
			Methods    []struct {
				Name       string `json:"name"`
				Overridden bool   `json:"overridden"`
				Async      bool   `json:"async"`
			} `json:"methods"`
			Plan *struct {
				SessionBound bool `json:"session_bound"`
			} `json:"plan"`
		} `json:"providers"`
	}
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Providers) != 1 {
		t.Fatalf("%d providers listed", len(out.Providers))
	}
	p := out.Providers[0]
	if !p.Loaded || !p.IsSubclass || p.Provider != "reference" || p.Plan == nil || !p.Plan.SessionBound {
		t.Fatalf("unexpected description: %+v", p)
	}
	seen := map[string]bool{}
	for _, m := range p.Methods {
		seen[m.Name] = m.Overridden
		if m.Name == "plan" && m.Async {
			t.Error("plan reported async")
		}
	}
	if len(seen) != 7 || !seen["prepare_turn"] {
		t.Fatalf("methods: %+v", p.Methods)
	}
	if strings.Contains(stdout, "astx_canary_") {
		t.Fatal("a canary reached the providers output")
	}
}

func TestSimulateClaimShowsASessionBoundClaim(t *testing.T) {
	code, stdout, stderr := run(t, "simulate", "claim", "--project", repoPath("examples/providers/reference"))
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"engine_initialized=false", "claims box box-1", "prepare_session returned RuntimeMaterials", "delivered token.json", "activated for session s1", "REFERENCE_TOKEN_FILE=<redacted>"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("timeline lacks %q:\n%s", want, stdout)
		}
	}
	if strings.Contains(stdout, "astx_") {
		t.Error("the timeline shows a secret")
	}
}

func TestReportMergeCombinesShards(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.json"), filepath.Join(dir, "b.json")
	for _, args := range [][]string{
		{"conformance", "run", "--project", repoPath("testdata/providers/broken/plan-no-io"), "--check", "PLAN-*", "--json", a},
		{"conformance", "run", "--project", repoPath("testdata/providers/broken/plan-no-io"), "--check", "PLAN-*", "--json", b},
	} {
		if code, _, stderr := run(t, args...); code != ExitFailed {
			t.Fatalf("exit %d: %s", code, stderr)
		}
	}
	code, stdout, stderr := run(t, "report", "merge", a, b, "--format", "json")
	if code != ExitFailed {
		t.Fatalf("merge exit %d: %s", code, stderr)
	}
	var rep struct {
		Summary struct{ Total, Failed int } `json:"summary"`
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil || rep.Summary.Total != 3 || rep.Summary.Failed != 1 {
		t.Fatalf("merged summary %+v (%v)", rep.Summary, err)
	}
	os.WriteFile(filepath.Join(dir, "bad.json"), []byte("{"), 0o644)
	if code, _, stderr := run(t, "report", "merge", filepath.Join(dir, "bad.json")); code != ExitUndecided || !strings.Contains(stderr, "bad.json") {
		t.Fatalf("bad report: exit %d %q", code, stderr)
	}
}
