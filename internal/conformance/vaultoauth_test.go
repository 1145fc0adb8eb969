package conformance

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/astrabox-dev/astrabox/internal/report"
)

const vaultOAuthDir = "../../examples/providers/vault-oauth"

// TestVaultOAuthNamesOnlyProductionURLs proves that the vault-oauth example is a provider written against its
// production systems: its code names no ASTRABOX_ variable and neither the kit's double nor a loopback
// address, and every URL it contains is one of Fabrikam's production https URLs.
func TestVaultOAuthNamesOnlyProductionURLs(t *testing.T) {
	forbidden := regexp.MustCompile(`(?i)ASTRABOX_|double|127\.0\.0\.1|localhost|::1|__astrabox`)
	urlRE := regexp.MustCompile(`[a-z]+://[^\s"'/]+`)
	allowed := map[string]bool{"https://vault.fabrikam.example:8200": true, "https://login.fabrikam.example": true}
	files, _ := filepath.Glob(filepath.Join(vaultOAuthDir, "src", "fabrikam_vault", "*.py"))
	if len(files) < 4 {
		t.Fatalf("expected the example's modules under src/fabrikam_vault, found %v", files)
	}
	var urls int
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(data), "\n") {
			if m := forbidden.FindString(line); m != "" {
				t.Errorf("%s:%d names %q: %s", f, i+1, m, strings.TrimSpace(line))
			}
			for _, u := range urlRE.FindAllString(line, -1) {
				urls++
				if !allowed[u] {
					t.Errorf("%s:%d names %s, which is not one of the example's production URLs", f, i+1, u)
				}
			}
		}
	}
	if urls < 2 {
		t.Errorf("found %d production URLs in the example's code, want both services named", urls)
	}
}

// TestVaultTwinsBreakThroughTheVault judges each broken twin of vault-oauth over its recorded evidence and
// proves that the clause it is named after fails because of a request that went to the Vault service: the
// finding's evidence names the recorded request (a /v1/secret/data/ path, which only the Vault fake serves)
// and a source line. `make test` judges each twin's recorded run with today's judge, so no Python starts
// (TestFixtures, in the long lane, plays each twin live and holds the recording to it); the long lane also
// asserts this over a live run.
func TestVaultTwinsBreakThroughTheVault(t *testing.T) {
	twins := map[string]string{
		"turn-idempotent-vault":     "TURN-IDEMPOTENT",
		"sync-skip-unchanged-vault": "SYNC-SKIP-UNCHANGED",
		"sync-quiescent-vault":      "SYNC-QUIESCENT",
		"recover-truth-vault":       "RECOVER-TRUTH",
		"gen-cancel-clean-vault":    "GEN-CANCEL-CLEAN",
		"ua-idempotent-vault":       "UA-IDEMPOTENT",
	}
	for dir, check := range twins {
		dir, check := dir, check
		t.Run(dir, func(t *testing.T) {
			recordedThenLive(t, "broken/"+dir, false, func(t *testing.T, j judged) { vaultRequestBroke(t, j.results, check) })
		})
	}
}

// vaultRequestBroke: check failed, and its message or an evidence item names a Vault request with a source
// line.
func vaultRequestBroke(t *testing.T, results []report.Result, check string) {
	t.Helper()
	var res *report.Result
	for i := range results {
		if results[i].Check == check {
			res = &results[i]
		}
	}
	if res == nil || res.Status != report.StatusFailed {
		t.Fatalf("%s did not fail: %+v", check, res)
	}
	found := false
	for _, e := range append([]report.Evidence{{Text: res.Message, Location: res.Location}}, res.Evidence...) {
		if strings.Contains(e.Text, "/v1/secret/data/") && !strings.Contains(e.Text, "/v1/records/") &&
			e.Location != nil && e.Location.Line > 0 && e.Location.Path != "" {
			found = true
		}
	}
	if !found {
		t.Errorf("no evidence of %s names a Vault request with a source line: %s %+v", check, res.Message, res.Evidence)
	}
}
