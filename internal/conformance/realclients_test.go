package conformance

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/astrabox-dev/astrabox/internal/report"
	"github.com/astrabox-dev/astrabox/internal/testutil"
)

// fakeRecord is one line a fixture's fake wrote to $FAKE_RECORD_DIR/<service>-<pid>.jsonl: a request as the
// fake saw it (method, path or AWS target, status, body, idempotency key) or a reset between scenarios.
type fakeRecord struct {
	File           string          `json:"-"`
	Event          string          `json:"event"`
	T              float64         `json:"t"`
	Method         string          `json:"method"`
	Path           string          `json:"path"`
	Target         string          `json:"target"`
	Host           string          `json:"host"`
	Status         int             `json:"status"`
	IdempotencyKey string          `json:"idempotency_key"`
	Consent        string          `json:"consent"`
	Principal      string          `json:"principal"`
	Body           json.RawMessage `json:"body"`
}

// realClientFixture is a provider written with a real client library, with the proof its fake's record
// must hold (nil for none beyond traffic reaching the fake).
type realClientFixture struct {
	dir    string
	module string
	// timing marks verdicts that depend on when a request lands (cancellation, late writes): run ten times
	// with ASTRABOX_REPRO=all. ASTRABOX_REALCLIENTS_REPEAT=10 runs every fixture ten times.
	timing bool
	prove  func(recs []fakeRecord) error
}

// realClientFixtures are issue 26's fixtures: five libraries, each in its house style, and their twins.
var realClientFixtures = []realClientFixture{
	{dir: "correct/lib-hvac", module: "hvac"},
	{dir: "correct/lib-httpx", module: "httpx"},
	{dir: "correct/lib-authlib", module: "authlib"},
	{dir: "correct/lib-boto3", module: "boto3"},
	{dir: "correct/lib-aiohttp", module: "aiohttp"},
	{dir: "broken/turn-idempotent-hvac", module: "hvac", prove: writtenTwice("POST", "/v1/kv/data/attempts/")},
	{dir: "broken/gen-cancel-clean-hvac", module: "hvac", timing: true, prove: applied("POST", "/v1/kv/data/turn-log/s1/c1")},
	{dir: "broken/sync-identity-hvac", module: "hvac", prove: twoKeysForOneAgent("/v1/kv/data/agents/agent-1")},
	{dir: "broken/turn-idempotent-httpx", module: "httpx", prove: writtenTwice("POST", "/credential")},
	{dir: "broken/gen-no-dispatch-httpx", module: "httpx", timing: true, prove: lateAfter("POST", "/v1/audit-events", "/credential")},
	{dir: "broken/gen-cancel-clean-httpx", module: "httpx", timing: true, prove: applied("PUT", "/v1/sessions/s1/attempts/c1/started")},
	{dir: "broken/leak-log-httpx", module: "httpx", prove: applied("POST", "/credential")},
	{dir: "broken/leak-log-authlib", module: "authlib", prove: applied("POST", "/oauth2/token")},
	{dir: "broken/kit-egress-undeclared-authlib", module: "authlib", prove: neverReached("metrics.quillfeather.example")},
	{dir: "broken/ua-authority-authlib", module: "authlib", prove: grantedWhilePending("PUT", "/v1/grants/")},
	{dir: "broken/sync-identity-boto3", module: "boto3", prove: twoKeysForOneAgent("agent#agent-1")},
	{dir: "broken/kit-egress-undeclared-boto3", module: "boto3", prove: neverReached("monitoring.")},
	{dir: "broken/leak-log-boto3", module: "boto3", prove: applied("secretsmanager.GetSecretValue", "")},
	{dir: "broken/ua-authority-aiohttp", module: "aiohttp", prove: grantedWhilePending("PUT", "/v2/attempts/")},
	{dir: "broken/gen-no-dispatch-aiohttp", module: "aiohttp", timing: true, prove: lateAfter("POST", "/v2/events", "/v2/attempts/")},
	{dir: "broken/gen-cancel-clean-aiohttp", module: "aiohttp", timing: true, prove: applied("PUT", "/v2/markers/turn-started/s1/c1")},
}

// TestRealClientFixtures runs each real-client fixture, holds its verdict to expect.json and finds the
// breach of each twin in its own fake's record of requests, not in the kit's verdict. `make test` runs the
// one in liveSample; the long lane runs them all. With
// ASTRABOX_REALCLIENTS_REPEAT=N every fixture runs N times, and with ASTRABOX_REPRO=all the timing-sensitive
// ones run ten times; each must give the same verdict every time.
func TestRealClientFixtures(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python and the fixtures' fakes")
	}
	every, timing := 1, 1
	if n, err := strconv.Atoi(os.Getenv("ASTRABOX_REALCLIENTS_REPEAT")); err == nil && n > 0 {
		every, timing = n, n
	} else if os.Getenv("ASTRABOX_REPRO") == "all" {
		timing = reproRuns
	}
	setRealClientEnv(t)
	for _, fx := range realClientFixtures {
		fx := fx
		t.Run(fx.dir, func(t *testing.T) {
			if !liveSample[fx.dir] {
				testutil.LongLane(t, "every real-client fixture live")
			}
			if err := exec.Command(systemPython, "-c", "import "+fx.module).Run(); err != nil {
				t.Skipf("%s has no %s module (.ci/run installs python3-%s)", systemPython, fx.module, fx.module)
			}
			dir := filepath.Join("../../testdata/providers", fx.dir)
			var exp expectation
			data, err := os.ReadFile(filepath.Join(dir, "expect.json"))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(data, &exp); err != nil {
				t.Fatalf("bad expect.json: %v", err)
			}
			var extra struct {
				FailEvidence map[string]string `json:"fail_evidence"`
			}
			_ = json.Unmarshal(data, &extra)
			runs := every
			if fx.timing {
				runs = timing
			}
			var first string
			for i := 0; i < runs; i++ {
				fakeRecords := t.TempDir()
				t.Setenv("FAKE_RECORD_DIR", fakeRecords)
				var rec *Recording
				var rep *report.Report
				if i == 0 {
					rec, rep, err = recordRun(t, dir, fx.dir)
				} else {
					rep, err = runProject(t, dir)
				}
				if err != nil {
					t.Fatalf("run %d: %v", i+1, err)
				}
				got := verdict(rep)
				if i == 0 {
					first = got
					judgeRealClient(t, rep, exp, extra.FailEvidence)
					holdRecording(t, rec, len(exp.Fails) > 0)
					recs := readFakeRecords(t, fakeRecords)
					if len(requestsOnly(recs)) == 0 {
						t.Errorf("the fixture's fakes recorded no request: nothing reached them")
					} else if fx.prove != nil {
						if err := fx.prove(recs); err != nil {
							t.Errorf("the fake's record does not show the breach: %v", err)
						}
					}
				} else if got != first {
					t.Fatalf("run %d of %d gave another verdict than run 1:\n%s", i+1, runs, diffLines(first, got))
				}
			}
		})
	}
}

// judgeRealClient holds a report to expect.json: exactly the failures listed, their messages and
// evidence, and no not-exercised check on a correct fixture.
func judgeRealClient(t *testing.T, rep *report.Report, exp expectation, evidence map[string]string) {
	t.Helper()
	failed := map[string]report.Result{}
	for _, r := range rep.Results {
		if r.Status == report.StatusFailed {
			failed[r.Check] = r
		}
	}
	for _, id := range exp.Fails {
		if _, ok := failed[id]; !ok {
			t.Errorf("expected %s to fail; results: %s", id, summarize(rep))
		}
	}
	for id, r := range failed {
		if !contains(exp.Fails, id) {
			t.Errorf("unexpected failure %s: %s", id, r.Message)
		}
	}
	for id, want := range exp.FailMessages {
		if r, ok := failed[id]; ok && !strings.Contains(r.Message, want) {
			t.Errorf("%s failed for another reason than the fixture claims: %q lacks %q", id, r.Message, want)
		}
	}
	for id, want := range evidence {
		r, ok := failed[id]
		if !ok {
			continue
		}
		found := false
		for _, e := range r.Evidence {
			found = found || strings.Contains(e.Text, want)
		}
		if !found {
			t.Errorf("%s: no evidence names %q", id, want)
		}
	}
	checkExercised(t, rep, exp)
}

// readFakeRecords reads every JSONL record the fakes wrote in dir, in file order; resets stay in place so
// that a proof can keep to one scenario.
func readFakeRecords(t *testing.T, dir string) []fakeRecord {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	sort.Strings(files)
	var out []fakeRecord
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		for sc.Scan() {
			var r fakeRecord
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			r.File = filepath.Base(f)
			out = append(out, r)
		}
		fh.Close()
	}
	return out
}

func requestsOnly(recs []fakeRecord) []fakeRecord {
	var out []fakeRecord
	for _, r := range recs {
		if r.Event == "" {
			out = append(out, r)
		}
	}
	return out
}

// what names a request the way the proofs match it: "METHOD path", or the AWS target.
func (r fakeRecord) what() string {
	if r.Target != "" {
		return r.Target + " " + string(r.Body)
	}
	return r.Method + " " + r.Path
}

func ok2xx(r fakeRecord) bool { return r.Status >= 200 && r.Status < 300 }

// applied proves that the fake applied (2xx) a request of that method whose path holds part; for an AWS
// target, method is the target and part may be empty.
func applied(method, part string) func([]fakeRecord) error {
	return func(recs []fakeRecord) error {
		for _, r := range requestsOnly(recs) {
			if ok2xx(r) && (r.Method == method || r.Target == method) && strings.Contains(r.Path, part) {
				return nil
			}
		}
		return fmt.Errorf("no applied %s %s among %d requests", method, part, len(requestsOnly(recs)))
	}
}

// writtenTwice proves that one path holding part was written (2xx) twice within one scenario of one fake.
func writtenTwice(method, part string) func([]fakeRecord) error {
	return func(recs []fakeRecord) error {
		seen := map[string]int{}
		scenario := 0
		for _, r := range recs {
			if r.Event == "reset" {
				scenario++
				continue
			}
			if r.Method == method && ok2xx(r) && strings.Contains(r.Path, part) {
				k := fmt.Sprintf("%s#%d %s", r.File, scenario, r.Path)
				if seen[k]++; seen[k] == 2 {
					return nil
				}
			}
		}
		return fmt.Errorf("no %s ...%s... written twice in one scenario", method, part)
	}
}

// twoKeysForOneAgent proves that one scenario wrote the same Agent under two resource keys (a path or a
// DynamoDB pk beginning with prefix).
func twoKeysForOneAgent(prefix string) func([]fakeRecord) error {
	return func(recs []fakeRecord) error {
		keys := map[string]map[string]bool{}
		scenario := 0
		for _, r := range recs {
			if r.Event == "reset" {
				scenario++
				continue
			}
			if !ok2xx(r) {
				continue
			}
			key := ""
			switch {
			case r.Method == "POST" && strings.HasPrefix(r.Path, prefix):
				key = r.Path
			case strings.HasSuffix(r.Target, ".PutItem"):
				var item struct {
					Item struct {
						PK struct {
							S string `json:"S"`
						} `json:"pk"`
					} `json:"Item"`
				}
				if json.Unmarshal(r.Body, &item) == nil && strings.HasPrefix(item.Item.PK.S, prefix) {
					key = item.Item.PK.S
				}
			}
			if key == "" {
				continue
			}
			s := fmt.Sprintf("%s#%d", r.File, scenario)
			if keys[s] == nil {
				keys[s] = map[string]bool{}
			}
			if keys[s][key] = true; len(keys[s]) >= 2 {
				return nil
			}
		}
		return fmt.Errorf("no scenario wrote %s under two keys", prefix)
	}
}

// lateAfter proves that a write (method, path holding part) landed at least 0.15 s after the last request
// of the turn whose work it was (the newest earlier request whose path holds turn), as a leftover does.
func lateAfter(method, part, turn string) func([]fakeRecord) error {
	return func(recs []fakeRecord) error {
		var last float64
		for _, r := range recs {
			if r.Event == "reset" {
				last = 0
				continue
			}
			if strings.Contains(r.Path, turn) {
				last = r.T
			}
			if r.Method == method && strings.Contains(r.Path, part) && ok2xx(r) && last > 0 && r.T-last >= 0.15 {
				return nil
			}
		}
		return fmt.Errorf("no %s %s landing 0.15 s or more after the turn's last %s request", method, part, turn)
	}
}

// neverReached proves that no request for host reached any fake (the kit refused it; nothing stood in).
func neverReached(host string) func([]fakeRecord) error {
	return func(recs []fakeRecord) error {
		for _, r := range requestsOnly(recs) {
			if strings.Contains(r.Host, host) {
				return fmt.Errorf("a fake answered %s for %s", r.what(), host)
			}
		}
		return nil
	}
}

// grantedWhilePending proves that the fake said (or was told) a principal's consent was pending and still
// applied a write (method, path under prefix) of that principal's Session.
func grantedWhilePending(method, prefix string) func([]fakeRecord) error {
	return func(recs []fakeRecord) error {
		pending := map[string]bool{} // principal -> the fake last said (or was told) pending
		for _, r := range recs {
			if r.Event == "reset" {
				pending = map[string]bool{}
				continue
			}
			if r.Principal != "" && r.Consent != "" {
				pending[r.Principal] = r.Consent == "pending"
			}
			if r.Method != method || !strings.HasPrefix(r.Path, prefix) || !ok2xx(r) {
				continue
			}
			// The Session's ID names its principal (s-<principal>) in the suite's scenarios.
			session, _, _ := strings.Cut(strings.TrimPrefix(r.Path, prefix), "/")
			if p := strings.TrimPrefix(session, "s-"); p != session && pending[p] {
				return nil
			}
		}
		return fmt.Errorf("no %s %s... for a principal's Session applied while the fake said that principal's consent was pending", method, prefix)
	}
}

// setRealClientEnv sets the environment the real-client fixtures run in: Kestrel (boto3) takes its
// credentials from the default chain, as on an instance without a role file.
func setRealClientEnv(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIAKESTRELFIXTURE00")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "kestrel-fixture-secret-access-key")
}
