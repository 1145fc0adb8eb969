package services

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
)

func parseTOML(t *testing.T, src string) (any, string) {
	t.Helper()
	var doc map[string]any
	if _, err := toml.Decode(src, &doc); err != nil {
		t.Fatal(err)
	}
	return doc["tool"].(map[string]any)["astrabox"].(map[string]any)["services"], t.TempDir()
}

func TestParseServices(t *testing.T) {
	raw, dir := parseTOML(t, `
[tool.astrabox.services.vault]
urls = ["https://vault.corp.example:8200"]
run = "python3 tests/fakes/vault.py --port {port}"
reads = ["POST /v1/sys/capabilities"]
operation-header = "X-Request-Id"

[tool.astrabox.services.oauth]
urls = ["https://login.corp.example", "http://login-legacy.corp.example"]
run = "./fake-oauth --listen 127.0.0.1:{port}"
reset = "restart"
secret-fields = ["/access_token"]
`)
	specs, err := Parse(raw, "pyproject.toml", dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(specs) != 2 || specs[0].Name != "oauth" || specs[1].Name != "vault" {
		t.Fatalf("specs = %+v", specs)
	}
	if got := specs[0].Hosts; !reflect.DeepEqual(got, []string{"login.corp.example:443", "login-legacy.corp.example:80"}) {
		t.Errorf("oauth hosts = %v", got)
	}
	if specs[0].Reset != ResetRestart || !reflect.DeepEqual(specs[0].SecretFields, []string{"/access_token"}) {
		t.Errorf("oauth = %+v", specs[0])
	}
	v := specs[1]
	if v.Hosts[0] != "vault.corp.example:8200" || v.Reset != ResetRequest || v.OperationHeader != "X-Request-Id" ||
		len(v.Reads) != 1 || v.Reads[0].Method != "POST" || !reflect.DeepEqual(v.SecretFields, DefaultSecretFields) {
		t.Errorf("vault = %+v", v)
	}
}

func TestParseServicesErrorsNameTheKey(t *testing.T) {
	cases := map[string]string{
		`[tool.astrabox.services.a]
run = "x {port}"`: "services.a.urls: is required",
		`[tool.astrabox.services.a]
urls = ["https://a.example"]`: "needs run",
		`[tool.astrabox.services.a]
urls = ["https://a.example"]
run = "fake --port 8080"`: "must contain {port}",
		`[tool.astrabox.services.a]
urls = ["ftp://a.example"]
run = "x {port}"`: "not an http:// or https://",
		`[tool.astrabox.services.a]
urls = ["https://user:pw@a.example"]
run = "x {port}"`: "carries credentials",
		`[tool.astrabox.services.a]
urls = ["http://127.0.0.1:9000"]
run = "x {port}"`: "loopback",
		`[tool.astrabox.services.a]
urls = ["https://a.example"]
run = "x {port}"
stubs = "."`: "not both",
		`[tool.astrabox.services.a]
urls = ["https://a.example"]
run = "x {port}"
reset = "sometimes"`: "services.a.reset",
		`[tool.astrabox.services.a]
urls = ["https://a.example"]
run = "x {port}"
rn = "y"`: "services.a.rn: unknown key",
		`[tool.astrabox.services.a]
urls = ["https://a.example"]
run = "x {port}"
[tool.astrabox.services.b]
urls = ["https://A.example:443"]
run = "y {port}"`: "already declared by service a",
		`[tool.astrabox.services.a]
urls = ["https://a.example"]
stubs = "missing"`: "is not a directory",
	}
	for src, want := range cases {
		raw, dir := parseTOML(t, src)
		_, err := Parse(raw, "pyproject.toml", dir, nil)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.HasPrefix(err.Error(), "pyproject.toml: ") {
			t.Errorf("%s\n  err = %v, want %q", src, err, want)
		}
	}
	if _, err := Parse("nope", "astrabox.toml", ".", nil); err == nil || !strings.Contains(err.Error(), "must be a table") {
		t.Errorf("non-table: %v", err)
	}
}

func fakeSpec(t *testing.T, run string) Spec {
	wd, _ := os.Getwd()
	return Spec{Name: "records", URLs: []string{"https://records.corp.example"}, Hosts: []string{"records.corp.example:443"},
		Run: run, Dir: filepath.Join(wd, "testdata"), Ready: "/", ReadyTimeout: 10 * time.Second, Reset: ResetRequest}
}

func get(t *testing.T, h http.Handler, method, host, path string) (int, map[string]any) {
	t.Helper()
	req := httptest.NewRequest(method, "https://"+host+path, nil)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var doc map[string]any
	body, _ := io.ReadAll(rec.Result().Body)
	_ = json.Unmarshal(body, &doc)
	return rec.Code, doc
}

func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

func TestFakeStartsAnswersResetsAndStops(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python")
	}
	ctx := context.Background()
	si, err := Start(ctx, fakeSpec(t, "python3 fakes/counter.py --port {port}"))
	if err != nil {
		t.Fatal(err)
	}
	f := si.(*Fake)
	h := si.Handler()
	for i := 1; i <= 2; i++ {
		if code, doc := get(t, h, "POST", "records.corp.example", "/v1/records"); code != 201 || doc["writes"] != float64(i) {
			t.Fatalf("POST %d = %d %v", i, code, doc)
		}
	}
	if _, doc := get(t, h, "GET", "records.corp.example", "/"); doc["host"] != "records.corp.example" {
		t.Fatalf("the fake did not see the production Host: %v", doc)
	}
	pid := f.Pid()
	if err := si.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	if f.Pid() != pid {
		t.Fatal("a fake that implements the reset request was restarted")
	}
	if _, doc := get(t, h, "GET", "records.corp.example", "/"); doc["writes"] != float64(0) {
		t.Fatalf("state survived the reset: %v", doc)
	}
	if !strings.Contains(f.Output(), "fake listening on "+strconv.Itoa(f.Port())) {
		t.Fatalf("output not captured: %q", f.Output())
	}
	if err := si.Close(); err != nil {
		t.Fatal(err)
	}
	if alive(pid) {
		t.Fatalf("fake %d still running after Close", pid)
	}
}

func TestFakeWithoutResetIsRestarted(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python")
	}
	// A fake that knows nothing of the reset request: Python's http.server answers 501 to any POST, so the
	// default reset mode falls back to a restart.
	ctx := context.Background()
	s := fakeSpec(t, "exec python3 -m http.server --bind 127.0.0.1 {port}")
	si, err := Start(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	defer si.Close()
	f := si.(*Fake)
	pid, port := f.Pid(), f.Port()
	if err := si.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	if f.Pid() == pid || alive(pid) {
		t.Fatalf("restart kept the old process (old %d, new %d, alive %v)", pid, f.Pid(), alive(pid))
	}
	if code, _ := get(t, si.Handler(), "GET", "records.corp.example", "/"); code != 200 {
		t.Fatalf("restarted fake answered %d (port %d -> %d)", code, port, f.Port())
	}
}

func TestFakeThatDoesNotStartIsAClearError(t *testing.T) {
	ctx := context.Background()
	_, err := Start(ctx, fakeSpec(t, "echo 'listening? no: missing credentials file' >&2; exit 3 # {port}"))
	if err == nil || !strings.Contains(err.Error(), "exited before it answered") || !strings.Contains(err.Error(), "missing credentials file") {
		t.Fatalf("err = %v", err)
	}
	s := fakeSpec(t, "sleep 30 # {port}")
	s.ReadyTimeout = 300 * time.Millisecond
	started := time.Now()
	_, err = Start(ctx, s)
	if err == nil || !strings.Contains(err.Error(), "did not answer") {
		t.Fatalf("err = %v", err)
	}
	if time.Since(started) > 5*time.Second {
		t.Fatalf("a silent fake held the kit for %s", time.Since(started))
	}
}

func TestFakeGroupIsKilledWithItsChildren(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python")
	}
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "child.pid")
	// The fake starts a helper child that ignores SIGTERM, then serves.
	run := "sh -c 'trap \"\" TERM; echo $$ > " + pidFile + "; exec sleep 60' & exec python3 -m http.server --bind 127.0.0.1 {port}"
	si, err := Start(context.Background(), fakeSpec(t, run))
	if err != nil {
		t.Fatal(err)
	}
	var child int
	for i := 0; i < 100 && child == 0; i++ {
		b, _ := os.ReadFile(pidFile)
		child, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		time.Sleep(10 * time.Millisecond)
	}
	if child == 0 {
		t.Fatal("the helper child never wrote its pid")
	}
	si.Close()
	deadline := time.Now().Add(3 * time.Second)
	for alive(child) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if alive(child) {
		t.Fatalf("the fake's child %d outlived Close", child)
	}
}

func TestFakeDeathMidRunIsReported(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python")
	}
	si, err := Start(context.Background(), fakeSpec(t, "python3 fakes/counter.py --port {port}"))
	if err != nil {
		t.Fatal(err)
	}
	defer si.Close()
	if err := si.Alive(); err != nil {
		t.Fatal(err)
	}
	f := si.(*Fake)
	_ = syscall.Kill(-f.Pid(), syscall.SIGKILL)
	<-f.done
	if err := si.Alive(); err == nil || !strings.Contains(err.Error(), "exited during the run") || !strings.Contains(err.Error(), "fake listening") {
		t.Fatalf("Alive = %v", err)
	}
}

func TestStubsStandIn(t *testing.T) {
	wd, _ := os.Getwd()
	si, err := Start(context.Background(), Spec{Name: "oauth", Stubs: filepath.Join(wd, "testdata/stubs")})
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest("POST", "https://login.corp.example/oauth2/token", strings.NewReader("grant_type=client_credentials&client_id=x"))
	rec := httptest.NewRecorder()
	si.Handler().ServeHTTP(rec, req)
	if rec.Code != 200 {
		t.Fatalf("stub answered %d %s", rec.Code, rec.Body)
	}
	got := ResponseSecrets(rec.Body.Bytes(), DefaultSecretFields)
	if !reflect.DeepEqual(got, []string{"stub-access-token-1"}) {
		t.Fatalf("secrets = %v", got)
	}
}

func TestResponseSecrets(t *testing.T) {
	body := []byte(`{"data": {"data": {"Password": "hunter22", "user": "svc"}, "items": [{"token": "tok-abcdef"}, {"token": "x"}]}, "lease": "lease-123456"}`)
	if got := ResponseSecrets(body, DefaultSecretFields); !reflect.DeepEqual(got, []string{"hunter22", "tok-abcdef"}) {
		t.Errorf("by name = %v", got)
	}
	if got := ResponseSecrets(body, []string{"/lease", "/data/items/0/token", "/missing"}); !reflect.DeepEqual(got, []string{"lease-123456", "tok-abcdef"}) {
		t.Errorf("by pointer = %v", got)
	}
	if got := ResponseSecrets([]byte("not json token=abc"), DefaultSecretFields); got != nil {
		t.Errorf("non-JSON = %v", got)
	}
}

// TestParseServicesReportsEveryErrorWithItsLine: each problem of every service is reported, each with the
// line the line function gives for its key.
func TestParseServicesReportsEveryErrorWithItsLine(t *testing.T) {
	raw, dir := parseTOML(t, "[tool.astrabox.services.a]\nurls = [\"ftp://a.example\"]\nrun = \"x\"\n[tool.astrabox.services.b]\nurls = [\"https://b.example\"]\nrun = \"y {port}\"\nreset = \"often\"\n")
	lines := map[string]int{"services.a.urls": 2, "services.a.run": 3, "services.b.reset": 7}
	_, err := Parse(raw, "pyproject.toml", dir, func(k string) int { return lines[k] })
	errs := Errors(err)
	if len(errs) != 3 {
		t.Fatalf("%d errors, want 3: %v", len(errs), err)
	}
	for _, e := range errs {
		want := lines[e.KeyPath()]
		if e.Line != want || !strings.HasPrefix(e.Error(), "pyproject.toml:"+strconv.Itoa(want)+": "+e.KeyPath()+": ") {
			t.Errorf("%s: line %d, want %d: %v", e.KeyPath(), e.Line, want, e)
		}
	}
}

// TestReadyTimeoutHasTheSharedFloor: a ready-timeout below a millisecond (which would round to a zero wait)
// or nan (which passed the old range test) is refused like any other duration, naming the floor.
func TestReadyTimeoutHasTheSharedFloor(t *testing.T) {
	for v, want := range map[string]string{"1e-12": "below the shortest duration the kit accepts, 0.001 (1 ms)", "nan": "from 0 to 300"} {
		raw, dir := parseTOML(t, "[tool.astrabox.services.a]\nurls = [\"https://a.example\"]\nrun = \"x {port}\"\nready-timeout = "+v+"\n")
		_, err := Parse(raw, "pyproject.toml", dir, nil)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "ready-timeout") {
			t.Errorf("ready-timeout = %s: err = %v, want %q", v, err, want)
		}
	}
	raw, dir := parseTOML(t, "[tool.astrabox.services.a]\nurls = [\"https://a.example\"]\nrun = \"x {port}\"\nready-timeout = 0.001\n")
	specs, err := Parse(raw, "pyproject.toml", dir, nil)
	if err != nil || specs[0].ReadyTimeout != time.Millisecond {
		t.Errorf("ready-timeout = 0.001: %v %v", specs, err)
	}
}
