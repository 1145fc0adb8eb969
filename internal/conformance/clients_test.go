package conformance

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/astrabox-dev/astrabox/internal/report"
	"github.com/astrabox-dev/astrabox/internal/simulate"
)

// systemPython is Debian's interpreter, where python3-httpx, -aiohttp, -requests, -hvac and -boto3 live
// (.ci/run installs them).
const systemPython = "/usr/bin/python3"

// needSystemClients skips a test when the system interpreter lacks one of the modules it imports.
func needSystemClients(t *testing.T, modules ...string) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts Python")
	}
	script := "import " + strings.Join(modules, ", ")
	if out, err := exec.Command(systemPython, "-c", script).CombinedOutput(); err != nil {
		t.Skipf("%s cannot %s: %v %s", systemPython, script, err, out)
	}
}

// judgedWith plays the default suite on a fixture with the given interpreter and judges it.
func judgedWith(t *testing.T, dir, python string) (*report.Report, []*simulate.History) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Second)
	defer cancel()
	abs, _ := filepath.Abs(dir)
	o := Options{Project: abs, Python: python, Jobs: 2, Getenv: pathOnly}
	tg, err := Resolve(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	info, reply, err := Inspect(ctx, tg)
	if err != nil || info == nil {
		t.Fatalf("inspect: %v %v", err, LoadError(tg, reply))
	}
	ev, err := Collect(ctx, tg, info, 1, o)
	if err != nil {
		t.Fatal(err)
	}
	return mustDecide(t, ev, tg, 1, o), ev.Histories
}

// TestClientLibrariesTrustTheRunCA runs one provider that reads through requests, hvac, httpx (sync and
// async), boto3, aiohttp and aiohttp with certifi's bundle, each in its documented default form, against
// declared HTTPS services at production addresses. Every client must reach its stand-in (proved from the
// services' own record of requests) and nothing may fail: before the kit named AWS_CA_BUNDLE and answered
// certifi.where(), boto3 and the certifi form rejected the run's certificate and prepare_session failed
// GEN-SETTLES.
func TestClientLibrariesTrustTheRunCA(t *testing.T) {
	needSystemClients(t, "requests", "hvac", "httpx", "aiohttp", "boto3", "certifi")
	t.Parallel() // beside TestAHungProviderWaitsOutOneDeadline, whose run mostly waits
	rep, hists := judgedWith(t, "../../testdata/clients/tls_clients", systemPython)
	for _, id := range []string{"GEN-SETTLES", KitTLSTrust} {
		if r := resultOf(t, rep.Results, id); r.Status != report.StatusPassed {
			t.Errorf("%s: %s %s", id, r.Status, r.Message)
		}
	}
	want := map[string]bool{
		"api GET /v1/clients/requests": false, "api GET /v1/clients/httpx-sync": false,
		"api GET /v1/clients/httpx-async": false, "api GET /v1/clients/aiohttp": false,
		"api GET /v1/clients/aiohttp-certifi": false, "vault GET /v1/secret/data/agents/model": false,
		"secretsmanager POST /": false,
	}
	for _, h := range hists {
		for _, r := range h.Requests {
			key := r.Service + " " + r.Method + " " + r.Path
			if _, ok := want[key]; ok && r.Status == 200 {
				want[key] = true
			}
		}
	}
	for k, seen := range want {
		if !seen {
			t.Errorf("no request answered 200 for %s", k)
		}
	}
}

// TestBoto3RejectingTheRunCAIsReportedAsTrust: the same boto3 code with AWS_CA_BUNDLE pointed at botocore's
// own bundle by the provider (as a hardened image might) rejects the run's certificate; the run says so under
// KIT-TLS-TRUST, naming botocore and the file it read, and GEN-SETTLES is not failed for it.
func TestBoto3RejectingTheRunCAIsReportedAsTrust(t *testing.T) {
	needSystemClients(t, "boto3")
	t.Parallel() // beside TestAHungProviderWaitsOutOneDeadline, whose run mostly waits
	rep, _ := judgedWith(t, "../../testdata/clients/boto3_pinned", systemPython)
	tls := resultOf(t, rep.Results, KitTLSTrust)
	if tls.Status != report.StatusFailed {
		t.Fatalf("%s: %s %s", KitTLSTrust, tls.Status, tls.Message)
	}
	msg := tls.Message
	for _, w := range []string{"botocore rejected the certificate of the declared service secretsmanager.us-east-1.amazonaws.com",
		"botocore/cacert.pem", "AWS_CA_BUNDLE"} {
		if !strings.Contains(msg, w) {
			t.Errorf("finding lacks %q: %s", w, msg)
		}
	}
	if r := resultOf(t, rep.Results, "GEN-SETTLES"); r.Status == report.StatusFailed {
		t.Errorf("GEN-SETTLES failed for a trust problem: %s", r.Message)
	}
}

// TestPythonSettingPinsTheInterpreter: the python key of [tool.astrabox] chooses the interpreter when neither
// --python nor ASTRABOX_PYTHON is given, and the choice says where it was set.
func TestPythonSettingPinsTheInterpreter(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python")
	}
	abs, _ := filepath.Abs("../../testdata/clients/boto3_secrets")
	tg, err := Resolve(context.Background(), Options{Project: abs, Getenv: pathOnly})
	if err != nil {
		t.Fatal(err)
	}
	if tg.Python.Path != systemPython || !strings.Contains(tg.Python.Rule, `python = "/usr/bin/python3" in pyproject.toml:11`) {
		t.Fatalf("interpreter %s chosen by %q", tg.Python.Path, tg.Python.Rule)
	}
	tg, err = Resolve(context.Background(), Options{Project: abs, Python: "python3", Getenv: pathOnly})
	if err != nil || tg.Python.Path == systemPython || tg.Python.Rule != "--python flag" {
		t.Fatalf("--python must win over the setting: %v %+v", err, tg.Python)
	}
}

// TestBotocoreDebugBodiesAreWarningsAtInfo: botocore logs the GetSecretValue answer, secret and all, at DEBUG
// (logger botocore.parsers). A deployment at INFO never emits it, so LEAK-LOG warns, naming the library's
// logger and the line that quiets it, instead of failing a provider whose own logging is clean.
func TestBotocoreDebugBodiesAreWarningsAtInfo(t *testing.T) {
	needSystemClients(t, "boto3")
	t.Parallel() // beside TestAHungProviderWaitsOutOneDeadline, whose run mostly waits
	rep, _ := judgedWith(t, "../../testdata/clients/boto3_secrets", systemPython)
	r := resultOf(t, rep.Results, "LEAK-LOG")
	if r.Status != report.StatusWarning {
		t.Fatalf("LEAK-LOG: %s %s", r.Status, r.Message)
	}
	for _, w := range []string{"logger botocore.parsers", `logging.getLogger("botocore").setLevel(logging.INFO)`} {
		if !strings.Contains(r.Message, w) {
			t.Errorf("LEAK-LOG lacks %q: %s", w, r.Message)
		}
	}
}

// TestGrpcChannelIsRefusedAndNamed: grpcio resolves and connects in C, below the harness's socket hooks. Its
// channel to an undeclared collector still reaches the kit's egress proxy (grpc honours https_proxy) and is
// refused there, recorded against prepare_session, and the run names grpc as a client the kit sees only
// through the proxy: never a silent pass and never a connection out.
func TestGrpcChannelIsRefusedAndNamed(t *testing.T) {
	needSystemClients(t, "grpc")
	t.Parallel() // beside TestAHungProviderWaitsOutOneDeadline, whose run mostly waits
	rep, hists := judgedWith(t, "../../testdata/clients/grpc_telemetry", systemPython)
	r := resultOf(t, rep.Results, KitEgressUndeclared)
	if r.Status != report.StatusFailed {
		t.Fatalf("%s: %s %s", KitEgressUndeclared, r.Status, r.Message)
	}
	named := false
	for _, e := range r.Evidence {
		named = named || strings.Contains(e.Text, "grpc._cython.cygrpc (grpcio) by the end of prepare_session")
	}
	if !named {
		t.Errorf("no warning names grpc: %+v", r.Evidence)
	}
	refused := 0
	for _, h := range hists {
		for _, a := range h.Egress {
			if a.Host == "telemetry.acme-corp.example:443" {
				if !a.Refused {
					t.Fatalf("a connection went out: %+v", a)
				}
				refused++
			}
		}
	}
	if refused == 0 {
		t.Fatal("the proxy recorded no attempt to reach the collector")
	}
}
