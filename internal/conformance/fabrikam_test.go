package conformance

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/astrabox-dev/astrabox/internal/report"
	"github.com/astrabox-dev/astrabox/internal/testutil"
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
// principal the fake answered AWAITING_USER for. `make test` runs the correct provider live with the journal
// and judges the twin's recording (its blamed principals among those the fake holds pending: bob, dave,
// alice); the long lane also runs the twin live against its journal.
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
	t.Run("twin/recorded", func(t *testing.T) {
		results, _ := judgedRecording(t, "broken/ua-authority-own-service")
		blamed := blamedPrincipals(t, results)
		for _, who := range blamed {
			if who != "bob" && who != "dave" && who != "alice" {
				t.Errorf("blamed principal %q, whom the fake never holds pending", who)
			}
		}
	})
	t.Run("correct", func(t *testing.T) {
		rep, reads := runFabrikam(t, "../../testdata/providers/correct/fabrikam_consent")
		if p := pendingAt(reads); !p["bob"] || !p["dave"] || !p["alice"] {
			t.Errorf("the fake never answered AWAITING_USER for bob, dave and alice: %v", p)
		}
		if r := resultOf(t, rep.Results, "UA-AUTHORITY"); r.Status != report.StatusPassed {
			t.Errorf("correct provider: UA-AUTHORITY %s", r.Status)
		}
	})
	t.Run("twin/live", func(t *testing.T) {
		if testing.Short() {
			t.Skip("starts Python")
		}
		testutil.LongLane(t, "the twin live with its fake's journal")
		rep, reads := runFabrikam(t, "../../testdata/providers/broken/ua-authority-own-service")
		pending := pendingAt(reads)
		for _, who := range blamedPrincipals(t, rep.Results) {
			if !pending[who] {
				t.Errorf("blamed principal %q: the fake never answered AWAITING_USER for that principal (%v)", who, pending)
			}
		}
	})
}

// blamedPrincipals are the principals UA-AUTHORITY's findings say a turn held consent pending for; the check
// must have failed.
func blamedPrincipals(t *testing.T, results []report.Result) []string {
	t.Helper()
	r := resultOf(t, results, "UA-AUTHORITY")
	var out []string
	for _, e := range r.Evidence {
		if _, who, ok := strings.Cut(e.Text, "held consent pending for principal "); ok {
			out = append(out, who)
		}
	}
	if r.Status != report.StatusFailed || len(out) == 0 {
		t.Fatalf("the twin did not fail UA-AUTHORITY: %s %s", r.Status, r.Message)
	}
	return out
}
