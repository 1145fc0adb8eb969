package conformance

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/astrabox-dev/astrabox/internal/harness"
	"github.com/astrabox-dev/astrabox/internal/report"
	"github.com/astrabox-dev/astrabox/internal/simulate"
	"github.com/astrabox-dev/astrabox/internal/testutil"
)

// pooledClient is one provider of testdata/attribution/pools: a client library with one client (one
// connection pool) per process, made while the provider loaded, so that every request after the first of a
// process goes out on a connection another call opened.
type pooledClient struct {
	provider, module, prefix string
	// issuer is the kind of unit each request comes from: executor jobs for the sync clients, tasks for the
	// async ones.
	issuer harness.WorkKind
}

var pooledClients = []pooledClient{
	{"pool-httpclient", "http.client", "/v1/httpclient/", harness.WorkJob},
	{"pool-requests", "requests", "/v1/requests/", harness.WorkJob},
	{"pool-httpx-sync", "httpx", "/v1/httpx-sync/", harness.WorkJob},
	{"pool-httpx-async", "httpx", "/v1/httpx-async/", harness.WorkTask},
	{"pool-aiohttp", "aiohttp", "/v1/aiohttp/", harness.WorkTask},
	{"pool-botocore", "boto3", "/pooled-ledger/botocore/", harness.WorkJob},
}

// pooledSample is the pooled client `make test` runs (the standard library's: no module to install).
const pooledSample = "pool-httpclient"

// requireModule skips the test when the system interpreter cannot import module (outside CI, which installs
// every one of them: there a missing module fails).
func requireModule(t *testing.T, module string) {
	t.Helper()
	if err := exec.Command(systemPython, "-c", "import "+module).Run(); err != nil {
		if ciRun() {
			t.Fatalf("%s cannot import %s under CI (.ci/run installs it): %v", systemPython, module, err)
		}
		t.Skipf("%s cannot import %s", systemPython, module)
	}
}

// collectProvider runs the default suite on one provider of a project, in the system interpreter.
func collectProvider(t *testing.T, dir, provider string) (*report.Report, []*simulate.History) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 180*time.Second)
	defer cancel()
	abs, _ := filepath.Abs(dir)
	o := Options{Project: abs, Python: systemPython, Provider: provider, Jobs: 2, Getenv: pathOnly}
	tg, info := resolveInspect(ctx, t, o)
	ev, err := Collect(ctx, tg, info, 1, o)
	if err != nil {
		t.Fatal(err)
	}
	return mustDecide(t, ev, tg, 1, o), ev.Histories
}

// TestPooledClientsAttributeEachRequest: with each client library, a request on a pooled, kept-alive
// connection (opened by another call, over TLS through the proxy's CONNECT tunnel or a direct listener) is
// attributed to the call whose work issued it, on its replica, by the unit that issued it: never to the
// call that opened the connection, to another replica, or to the background. And each provider, which keeps
// every clause, passes the default suite with no warning. `make test` runs the standard library's client
// (pooledSample); the long lane runs every library.
func TestPooledClientsAttributeEachRequest(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python")
	}
	requireFile(t, systemPython)
	for _, pc := range pooledClients {
		t.Run(pc.provider, func(t *testing.T) {
			if pc.provider != pooledSample {
				testutil.LongLane(t, "every client library's pool")
			}
			requireModule(t, pc.module)
			rep, hists := collectProvider(t, "../../testdata/attribution/pools", pc.provider)
			seen, reused := 0, 0
			for _, h := range hists {
				byKey := map[string]*simulate.CallRecord{}
				for _, c := range h.Calls() {
					byKey[c.Key] = c
				}
				opened := map[string]bool{} // replicas whose pool already has a connection
				for _, rq := range h.Requests {
					if !strings.HasPrefix(rq.Path, pc.prefix) {
						continue
					}
					seen++
					if opened[rq.Replica] {
						reused++
					}
					opened[rq.Replica] = true
					c := byKey[rq.Call]
					if rq.Background || rq.InFlight != "" || c == nil || !pooledIssuedBy(pc.prefix, rq, c) {
						t.Errorf("%s: %s %s on %s attributed to %q (in flight %q, background %v), want the call of its session and attempt",
							h.Scenario, rq.Method, rq.Path, rq.Replica, rq.Call, rq.InFlight, rq.Background)
						continue
					}
					if rq.Issuer == nil || rq.Issuer.Kind != pc.issuer {
						t.Errorf("%s: %s %s issued by %+v, want a unit of kind %s", h.Scenario, rq.Method, rq.Path, rq.Issuer, pc.issuer)
					}
				}
			}
			if seen < 10 || reused == 0 {
				t.Fatalf("%d requests seen, %d after the first of their replica: the suite did not exercise a pool", seen, reused)
			}
			for _, r := range rep.Results {
				// A warning too: aiohttp's timeout and keep-alive handles, left on the loop by every request, are
				// the library's housekeeping, not work synchronize left running (SYNC-QUIESCENT).
				if r.Status == report.StatusFailed || r.Status == report.StatusNotExercised || r.Status == report.StatusWarning || r.Status == report.StatusFlaky {
					t.Errorf("%s %s: %s", r.Check, r.Status, r.Message)
				}
			}
		})
	}
}

// pooledIssuedBy reports whether rq (a probe request under prefix: agents/<id>, sessions/<id> or
// turns/<id>/<attempt>...)
// is the work of call c.
func pooledIssuedBy(prefix string, rq simulate.Request, c *simulate.CallRecord) bool {
	if c.Replica != rq.Replica {
		return false
	}
	rest := strings.TrimPrefix(rq.Path, prefix)
	parts := strings.Split(rest, "/")
	switch {
	case len(parts) >= 2 && parts[0] == "agents":
		return c.Is(simulate.CallSynchronize) && c.Ctx.Agent == parts[1]
	case len(parts) >= 2 && parts[0] == "sessions":
		return c.Is(simulate.CallPrepareSession) && c.Ctx.Session == parts[1]
	case len(parts) >= 3 && parts[0] == "turns":
		return c.Is(simulate.CallPrepareTurn) && c.Ctx.Session == parts[1] && c.Ctx.Attempt == parts[2]
	}
	return false
}

// ciRun reports a CI run (CI set, as .ci/run and every CI service set it), where a missing prerequisite is a
// failure rather than a reason to skip.
func ciRun() bool { return os.Getenv("CI") != "" }

// requireFile skips the test when path does not exist (outside CI).
func requireFile(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		if ciRun() {
			t.Fatalf("%s is missing under CI: %v", path, err)
		}
		t.Skipf("%s is missing", path)
	}
}
