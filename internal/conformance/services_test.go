package conformance

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/astrabox-dev/astrabox/internal/report"
	"github.com/astrabox-dev/astrabox/internal/simulate"
	"github.com/astrabox-dev/astrabox/internal/testutil"
)

// fakeProcesses lists the pids whose command line names marker.
func fakeProcesses(t *testing.T, marker string) []string {
	t.Helper()
	var out []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		cmd, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(cmd), marker) {
			out = append(out, e.Name())
		}
	}
	return out
}

func copyFixture(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.Walk(src, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if info.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// TestServiceFakeLifecycle: a fake that cannot start ends the run with exit 2 and its output; after a run,
// finished or interrupted, no fake process is left.
func TestServiceFakeLifecycle(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python")
	}
	src, _ := filepath.Abs("../../testdata/providers/correct/oauth_fake")
	proj := copyFixture(t, src)
	marker := filepath.Join(proj, "tests", "fakes", "identity.py")
	pyproject := filepath.Join(proj, "pyproject.toml")
	data, _ := os.ReadFile(pyproject)
	absolute := strings.Replace(string(data), "tests/fakes/identity.py", marker, 1)
	if err := os.WriteFile(pyproject, []byte(absolute), 0o644); err != nil {
		t.Fatal(err)
	}

	rep, err := runProject(t, proj)
	if err != nil || rep.HasFailures() {
		t.Fatalf("run: %v %+v", err, rep)
	}
	if left := fakeProcesses(t, marker); len(left) > 0 {
		t.Fatalf("fake processes left after the run: %v", left)
	}

	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for i := 0; i < 400 && len(fakeProcesses(t, marker)) == 0; i++ {
			time.Sleep(25 * time.Millisecond)
		}
		cancel()
	}()
	_, _ = Run(ctx, Options{Project: proj, Python: "python3", Getenv: pathOnly})
	if left := fakeProcesses(t, marker); len(left) > 0 {
		t.Fatalf("fake processes left after an interrupted run: %v", left)
	}

	broken := strings.Replace(absolute, "--port {port}", "--port {port} --crash", 1)
	broken = strings.Replace(broken, "exec python3 ", "echo identity fake: no signing key configured >&2; exit 4; python3 ", 1)
	if err := os.WriteFile(pyproject, []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = runProject(t, proj)
	var u *UndecidedError
	if !errors.As(err, &u) || !strings.Contains(err.Error(), "no signing key configured") || !strings.Contains(err.Error(), "service identity") {
		t.Fatalf("a fake that cannot start: %v", err)
	}
}

// TestServiceVerdictsDoNotDependOnTheSlot: a provider that writes to its own services gets the same verdicts,
// message for message, whether its scenarios run one at a time on one instance of each fake (-j 1) or two at
// a time, each slot with its own instances (-j 2). The twin chosen fails RECOVER-TRUTH through the Vault, so a
// failing verdict, which depends on the fake's state (a fence it holds or not), is compared too. It is in
// the long lane: two whole runs of one fixture, compared.
func TestServiceVerdictsDoNotDependOnTheSlot(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python")
	}
	testutil.LongLane(t, "two runs of one fixture compared")
	proj, _ := filepath.Abs("../../testdata/providers/broken/recover-truth-vault")
	verdicts := map[int]map[string]string{}
	for _, jobs := range []int{1, 2} {
		var log strings.Builder
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		rep, err := Run(ctx, Options{Project: proj, Python: "python3", Jobs: jobs, Getenv: pathOnly, Log: &log, Verbose: true})
		cancel()
		if err != nil {
			t.Fatalf("-j %d: %v\n%s", jobs, err, log.String())
		}
		if want := fmt.Sprintf("%d instance(s) of each of 2 declared service(s)", jobs); !strings.Contains(log.String(), want) {
			t.Fatalf("-j %d: the log does not say %q:\n%s", jobs, want, log.String())
		}
		verdicts[jobs] = map[string]string{}
		for _, r := range rep.Results {
			verdicts[jobs][r.Check] = string(r.Status) + ": " + r.Message
		}
	}
	if got := verdicts[2]["RECOVER-TRUTH"]; !strings.HasPrefix(got, "failed: ") || !strings.Contains(got, "/v1/secret/data/") {
		t.Fatalf("RECOVER-TRUTH with -j 2 = %q, want the twin's failure through the Vault", got)
	}
	if len(verdicts[1]) != len(verdicts[2]) {
		t.Fatalf("-j 1 judged %d checks, -j 2 %d", len(verdicts[1]), len(verdicts[2]))
	}
	for id, v1 := range verdicts[1] {
		if v2 := verdicts[2][id]; v1 != v2 {
			t.Errorf("%s: -j 1 %q, -j 2 %q", id, v1, v2)
		}
	}
}

// TestServiceFakeDeathMidRunIsUndecided: a fake that dies in the middle of a run with two scenario slots
// (each slot its own instance) ends the run with exit 2, its output, and no fake process left.
func TestServiceFakeDeathMidRunIsUndecided(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python")
	}
	src, _ := filepath.Abs("../../testdata/providers/correct/oauth_fake")
	proj := copyFixture(t, src)
	fake := filepath.Join(proj, "tests", "fakes", "identity.py")
	data, _ := os.ReadFile(fake)
	// Every instance serves three tokens, then exits as a fake with an expiring key might.
	dying := strings.Replace(string(data), "        ISSUED.append(token)\n",
		"        ISSUED.append(token)\n        if next(SERVED) == 3:\n            print('identity fake: signing key expired', flush=True)\n            os._exit(7)\n", 1)
	dying = strings.Replace(dying, "import itertools\n", "import itertools\nimport os\nSERVED = __import__('itertools').count(1)\n", 1)
	if dying == string(data) || !strings.Contains(dying, "os._exit(7)") {
		t.Fatal("the fixture's fake changed: cannot make it die")
	}
	if err := os.WriteFile(fake, []byte(dying), 0o644); err != nil {
		t.Fatal(err)
	}
	pyproject := filepath.Join(proj, "pyproject.toml")
	conf, _ := os.ReadFile(pyproject)
	if err := os.WriteFile(pyproject, []byte(strings.Replace(string(conf), "tests/fakes/identity.py", fake, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := runProject(t, proj) // --jobs 2
	var u *UndecidedError
	if !errors.As(err, &u) || !strings.Contains(err.Error(), "exited during the run") || !strings.Contains(err.Error(), "signing key expired") {
		t.Fatalf("a fake that died mid-run: %v", err)
	}
	if left := fakeProcesses(t, fake); len(left) > 0 {
		t.Fatalf("fake processes left after the run: %v", left)
	}
}

// heldAndDropped finds, in the default suite's histories, the requests the recovery scenario's first two
// steps held (host loss while synchronize's first write is held) and those the deadlines scenario's turn
// with a dropped material write dropped.
func heldAndDropped(t *testing.T, hists []*simulate.History) (held, dropped []simulate.Request) {
	t.Helper()
	for _, h := range hists {
		for _, e := range h.Events {
			c := e.Call
			if c == nil || h.Played == nil || e.Step < 1 || e.Step > len(h.Played.Steps) {
				continue
			}
			st := h.Played.Steps[e.Step-1]
			switch {
			case h.Scenario == "recovery" && e.Step <= 2 && c.Is(simulate.CallSynchronize):
				for _, rq := range h.RequestsOf(c.Key) {
					if rq.Held {
						held = append(held, rq)
					}
				}
			case h.Scenario == "deadlines" && st.Attempt == "p1" && st.Op == simulate.OpTurn && c.Is(simulate.CallPrepareTurn):
				for _, rq := range h.RequestsOf(c.Key) {
					if rq.Dropped {
						dropped = append(dropped, rq)
					}
				}
			}
		}
	}
	return held, dropped
}

// TestSuiteFaultsReachServiceWrites: the default suite's held first write of a synchronize (host loss,
// recover, release) and its dropped material write of a turn act on a provider that writes only to its own
// service, whatever the path and method: Tailspin's object store (http.client, POST /v2/objects/...) and the
// vault-oauth example's Vault (urllib, POST /v1/secret/data/...). Every check is exercised (checktest and
// TestFixtures fail on any not_exercised of a provider that should pass), each held write reached the service and was refused there once recover had
// fenced its operation, and the dropped writes were applied by the service. The broken twin that trusts an
// absent result fails RECOVER-TRUTH on exactly that held write.
//
// All three are judged over their recorded evidence (their live runs are TestFixtures', in the long lane,
// which holds each recording to them; checktest proves under -short that no check of Tailspin's or the
// example's was left not_exercised); the live runs of the same assertions are the long lane's.
func TestSuiteFaultsReachServiceWrites(t *testing.T) {
	for _, c := range []struct{ dir, service, prefix string }{
		{"../../testdata/providers/correct/tailspin_objects", "objects", "/v2/objects/"},
		{"../../examples/providers/vault-oauth", "vault", "/v1/secret/data/"},
	} {
		c := c
		assert := func(t *testing.T, hists []*simulate.History) {
			held, dropped := heldAndDropped(t, hists)
			if len(held) != 2 {
				t.Fatalf("the recovery scenario held %d write(s) of its first two synchronize calls, want 2: %+v", len(held), held)
			}
			for _, rq := range held {
				if rq.Service != c.service || rq.Method != "POST" || !strings.HasPrefix(rq.Path, c.prefix) {
					t.Errorf("held %s %s at %q, want a POST %s... at service %s", rq.Method, rq.Path, rq.Service, c.prefix, c.service)
				}
			}
			// op-1's write, released after recover fenced op-1, is refused by the service (never applied).
			if first := held[0]; first.Applied || first.Status < 400 {
				t.Errorf("op-1's held write, released after recover answered True, was answered %d (applied %v)", first.Status, first.Applied)
			}
			if len(dropped) == 0 {
				t.Fatal("no write of the deadlines scenario's turn p1 was dropped")
			}
			// One turn per write position: each dropped write went to a declared service (the vault-oauth
			// example's first is its token request to the oauth service), and the material write to the store.
			material := false
			for _, rq := range dropped {
				if rq.Service == "" || !rq.Applied {
					t.Errorf("dropped %s %s at %q (applied %v), want an applied write at a declared service", rq.Method, rq.Path, rq.Service, rq.Applied)
				}
				material = material || (rq.Service == c.service && rq.Method == "POST" && strings.HasPrefix(rq.Path, c.prefix))
			}
			if !material {
				t.Errorf("no dropped write of turn p1 was a POST %s... at service %s: %+v", c.prefix, c.service, dropped)
			}
		}
		t.Run(c.service, func(t *testing.T) {
			fixture, ok := recordedName(c.dir)
			if !ok {
				t.Fatalf("%s has no recording", c.dir)
			}
			recordedThenLive(t, fixture, false, func(t *testing.T, j judged) { assert(t, j.hists) })
		})
	}
	t.Run("recover-truth-objects", func(t *testing.T) {
		recordedThenLive(t, "broken/recover-truth-objects", false, func(t *testing.T, j judged) { recoverTrustedTheHeldWrite(t, j.results) })
	})
}

// recoverTrustedTheHeldWrite: RECOVER-TRUTH of broken/recover-truth-objects fails on op-1's held write.
func recoverTrustedTheHeldWrite(t *testing.T, results []report.Result) {
	t.Helper()
	r := resultOf(t, results, "RECOVER-TRUTH")
	if r.Status != report.StatusFailed || !strings.Contains(r.Message, "recover(op-1) returned True") ||
		!strings.Contains(r.Message, "POST /v2/objects/agents/agent-1 -> 201") {
		t.Errorf("RECOVER-TRUTH = %s: %s", r.Status, r.Message)
	}
}
