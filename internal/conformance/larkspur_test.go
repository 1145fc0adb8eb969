package conformance

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/astrabox-dev/astrabox/internal/report"
	"github.com/astrabox-dev/astrabox/internal/testutil"
)

// journalLine is one request a Larkspur fake recorded in its own journal (LARKSPUR_FAKE_JOURNAL).
type journalLine struct {
	Fake     string         `json:"fake"`
	PID      int            `json:"pid"`
	Epoch    int            `json:"epoch"`
	Key      string         `json:"key"`
	Replay   bool           `json:"replay"`
	Metadata map[string]any `json:"metadata"`
	Op       string         `json:"op"`
	Name     string         `json:"name"`
}

// runLarkspur runs the default suite on a Larkspur fixture with its fakes journaling, and returns the report
// and the journal.
func runLarkspur(t *testing.T, dir string) (*report.Report, []journalLine) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts Python")
	}
	if err := exec.Command("python3", "-c", "import boto3, requests").Run(); err != nil {
		t.Skip("python3 has no boto3 or requests")
	}
	path := filepath.Join(t.TempDir(), "journal.jsonl")
	t.Setenv("LARKSPUR_FAKE_JOURNAL", path)
	rep, err := runProject(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("the fakes wrote no journal: %v", err)
	}
	defer f.Close()
	var out []journalLine
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var l journalLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("journal line %q: %v", sc.Text(), err)
		}
		out = append(out, l)
	}
	return rep, out
}

// correctLarkspur is the one run of correct/larkspur that both tests below read (a report and a journal are
// only read, never changed): the run is the same default suite with the same seed for both.
var correctLarkspur struct {
	sync.Mutex
	rep   *report.Report
	lines []journalLine
}

// runCorrectLarkspur runs correct/larkspur as runLarkspur does, once per test binary.
func runCorrectLarkspur(t *testing.T) (*report.Report, []journalLine) {
	t.Helper()
	correctLarkspur.Lock()
	defer correctLarkspur.Unlock()
	if correctLarkspur.rep == nil {
		correctLarkspur.rep, correctLarkspur.lines = runLarkspur(t, "../../testdata/providers/correct/larkspur")
	}
	return correctLarkspur.rep, correctLarkspur.lines
}

// firstMints counts, per dispatch attempt of one scenario (one fake between resets), the token requests of
// non-refresh prepare_turn calls that the token API answered with a new token, and the replays.
func firstMints(lines []journalLine) (minted map[string]int, replays int) {
	minted = map[string]int{}
	for _, l := range lines {
		if l.Fake != "tokens.py" || l.Metadata == nil || l.Metadata["refresh"] == true {
			continue
		}
		if l.Replay {
			replays++
			continue
		}
		k := strings.Join([]string{string(rune(l.PID)), string(rune(l.Epoch)), l.Metadata["session"].(string), l.Metadata["attempt"].(string)}, "|")
		minted[k]++
	}
	return minted, replays
}

// TestLarkspurKeyedRetriesAreOneWrite: the correct Larkspur provider POSTs /v1/tokens again on every retry
// of an attempt with the attempt's Idempotency-Key; its token API's own journal shows the retries answered
// as replays and at most one token minted per attempt, and TURN-IDEMPOTENT passes. Its twin mints a new key
// per call: the journal shows two tokens minted for one attempt, and TURN-IDEMPOTENT fails naming the new
// key.
//
// `make test` runs correct/larkspur live (the journal against the kit's verdict) and judges the twin over its
// recording; the twin's live run with its journal is the long lane's (TestFixtures also runs it there and
// holds the recording to it).
func TestLarkspurKeyedRetriesAreOneWrite(t *testing.T) {
	t.Run("twin/recorded", func(t *testing.T) {
		results, err := recorded(t, "broken/turn-idempotent-new-key").Replay()
		if err != nil {
			t.Fatal(err)
		}
		assertNewKeyNamed(t, resultOf(t, results, "TURN-IDEMPOTENT"))
	})
	t.Run("correct", func(t *testing.T) {
		rep, lines := runCorrectLarkspur(t)
		minted, replays := firstMints(lines)
		if replays == 0 {
			t.Fatalf("no retry of an attempt asked the token API again: the suite did not exercise the key (%d lines)", len(lines))
		}
		for k, n := range minted {
			if n > 1 {
				t.Errorf("the correct provider had %d tokens minted for attempt %s", n, k)
			}
		}
		if r := resultOf(t, rep.Results, "TURN-IDEMPOTENT"); r.Status != report.StatusPassed {
			t.Errorf("TURN-IDEMPOTENT: %+v", r)
		}
	})
	t.Run("twin/live", func(t *testing.T) {
		if testing.Short() {
			t.Skip("starts Python")
		}
		testutil.LongLane(t, "the twin live with its fake's journal")
		rep, lines := runLarkspur(t, "../../testdata/providers/broken/turn-idempotent-new-key")
		minted, _ := firstMints(lines)
		twice := 0
		for _, n := range minted {
			if n > 1 {
				twice++
			}
		}
		if twice == 0 {
			t.Fatal("the twin's token API never minted two tokens for one attempt: the breach did not happen")
		}
		assertNewKeyNamed(t, resultOf(t, rep.Results, "TURN-IDEMPOTENT"))
	})
}

// assertNewKeyNamed: TURN-IDEMPOTENT of the new-key twin fails, and a finding names the token POST with its
// new key.
func assertNewKeyNamed(t *testing.T, r report.Result) {
	t.Helper()
	if r.Status != report.StatusFailed {
		t.Fatalf("TURN-IDEMPOTENT of the twin: %+v", r)
	}
	named := false
	for _, e := range r.Evidence {
		named = named || strings.Contains(e.Text, "POST /v1/tokens") && strings.Contains(e.Text, "is new")
	}
	if !named {
		t.Errorf("no finding names the token POST with its new key: %+v", r.Evidence)
	}
}

// TestLarkspurSecretPerVersion: the twin's Secrets Manager fake journals a CreateSecret per configuration
// version of agent-1, and SYNC-IDENTITY fails on the secret names; the correct provider's journal holds one
// secret per Agent. As above, `make test` runs correct/larkspur live and judges the twin over its recording;
// the twin's live run with its journal is the long lane's.
func TestLarkspurSecretPerVersion(t *testing.T) {
	secretsOf := func(lines []journalLine) map[string]bool {
		out := map[string]bool{}
		for _, l := range lines {
			if l.Fake == "secretsmanager.py" && l.Op == "CreateSecret" {
				out[l.Name] = true
			}
		}
		return out
	}
	twinFails := func(t *testing.T, r report.Result) {
		t.Helper()
		if r.Status != report.StatusFailed || !strings.Contains(r.Message, "secrets larkspur/agents/agent-1-v") {
			t.Fatalf("SYNC-IDENTITY of the twin: %+v", r)
		}
	}
	t.Run("twin/recorded", func(t *testing.T) {
		results, err := recorded(t, "broken/sync-identity-secret-per-version").Replay()
		if err != nil {
			t.Fatal(err)
		}
		twinFails(t, resultOf(t, results, "SYNC-IDENTITY"))
	})
	t.Run("correct", func(t *testing.T) {
		rep, lines := runCorrectLarkspur(t)
		for n := range secretsOf(lines) {
			if strings.Contains(n, "-v") {
				t.Errorf("the correct provider created %s", n)
			}
		}
		if r := resultOf(t, rep.Results, "SYNC-IDENTITY"); r.Status != report.StatusPassed {
			t.Errorf("SYNC-IDENTITY: %+v", r)
		}
	})
	t.Run("twin/live", func(t *testing.T) {
		if testing.Short() {
			t.Skip("starts Python")
		}
		testutil.LongLane(t, "the twin live with its fake's journal")
		rep, lines := runLarkspur(t, "../../testdata/providers/broken/sync-identity-secret-per-version")
		names := secretsOf(lines)
		if !names["larkspur/agents/agent-1-v1"] || !names["larkspur/agents/agent-1-v2"] {
			t.Fatalf("the twin's fake holds no secret per version: %v", names)
		}
		twinFails(t, resultOf(t, rep.Results, "SYNC-IDENTITY"))
	})
}
