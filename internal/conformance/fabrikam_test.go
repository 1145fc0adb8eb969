package conformance

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/astrabox-dev/astrabox/internal/report"
)

// consentRead is one consent read Fabrikam's fake recorded in its own journal (FABRIKAM_CONSENT_JOURNAL).
type consentRead struct {
	Port      int    `json:"port"`
	Seq       int    `json:"seq"`
	Principal string `json:"principal"`
	Answered  string `json:"answered"`
}

func runFabrikam(t *testing.T, dir string) (*report.Report, []consentRead) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts Python")
	}
	path := filepath.Join(t.TempDir(), "journal.jsonl")
	t.Setenv("FABRIKAM_CONSENT_JOURNAL", path)
	rep, err := runProject(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("the fake wrote no journal: %v", err)
	}
	defer f.Close()
	var out []consentRead
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r consentRead
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("journal line %q: %v", sc.Text(), err)
		}
		out = append(out, r)
	}
	return rep, out
}

// TestFabrikamConsentHeldByItsOwnService: the suite's control requests reach Fabrikam's consent fake (its
// journal shows AWAITING_USER answered to the provider's reads for the suite's pending principals). The
// correct provider passes UA-AUTHORITY; the twin fails it, and every turn the finding blames is one for a
// principal the fake answered AWAITING_USER for.
func TestFabrikamConsentHeldByItsOwnService(t *testing.T) {
	pendingAt := func(reads []consentRead) map[string]bool {
		out := map[string]bool{}
		for _, r := range reads {
			if r.Answered == "AWAITING_USER" {
				out[r.Principal] = true
			}
		}
		return out
	}
	rep, reads := runFabrikam(t, "../../testdata/providers/correct/fabrikam_consent")
	if p := pendingAt(reads); !p["bob"] || !p["dave"] || !p["alice"] {
		t.Errorf("the fake never answered AWAITING_USER for bob, dave and alice: %v", p)
	}
	for _, r := range rep.Results {
		if r.Check == "UA-AUTHORITY" && r.Status != report.StatusPassed {
			t.Errorf("correct provider: UA-AUTHORITY %s", r.Status)
		}
	}
	rep, reads = runFabrikam(t, "../../testdata/providers/broken/ua-authority-own-service")
	pending := pendingAt(reads)
	var found bool
	for _, r := range rep.Results {
		if r.Check != "UA-AUTHORITY" {
			continue
		}
		for _, e := range r.Evidence {
			_, who, ok := strings.Cut(e.Text, "held consent pending for principal ")
			if !ok {
				continue
			}
			found = true
			if !pending[who] {
				t.Errorf("blamed turn %q: the fake never answered AWAITING_USER for that principal (%v)", e.Text, pending)
			}
		}
	}
	if !found {
		t.Fatal("the twin did not fail UA-AUTHORITY")
	}
}
