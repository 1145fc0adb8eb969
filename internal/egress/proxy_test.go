package egress

import (
	"crypto/tls"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/astrabox-dev/astrabox/internal/stubs"
)

type recorder struct {
	mu   sync.Mutex
	recs []Record
}

func (r *recorder) add(rec Record) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recs = append(r.recs, rec)
}

func (r *recorder) all() []Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Record(nil), r.recs...)
}

// vault is a stand-in for a Vault-like service answering on a production-looking host.
func vault(t *testing.T) Service {
	t.Helper()
	ms, err := stubs.Parse("vault.json", []byte(`{"mappings": [
	  {"request": {"method": "GET", "urlPathPattern": "/v1/secret/data/.+", "headers": {"X-Vault-Token": {"equalTo": "root-token"}}},
	   "response": {"status": 200, "jsonBody": {"data": {"data": {"value": "kv-1"}}}}},
	  {"request": {"method": "POST", "urlPath": "/v1/secret/data/app"}, "response": {"status": 204}},
	  {"request": {"method": "POST", "urlPath": "/v1/search"}, "response": {"status": 200, "jsonBody": []}}
	]}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	return Service{Name: "vault", Hosts: []string{"vault.corp.example:8200", "plain.corp.example:80"}, Handler: stubs.NewSet(ms),
		Reads: []Route{{Method: "POST", PathPrefix: "/v1/search"}}}
}

func start(t *testing.T, policy Policy) (*Proxy, *CA, *recorder) {
	t.Helper()
	ca, err := NewCA()
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	p, err := Start(Options{Replica: "r1", Services: []Service{vault(t)}, CA: ca, Policy: policy, Observe: rec.add})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p, ca, rec
}

func client(p *Proxy, ca *CA) *http.Client {
	u, _ := url.Parse(p.URL())
	return &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(u), TLSClientConfig: &tls.Config{RootCAs: ca.Pool()}}}
}

func TestHTTPSToADeclaredServiceIsTerminatedAndRecorded(t *testing.T) {
	p, ca, rec := start(t, PolicyRefuse)
	c := client(p, ca)
	req, _ := http.NewRequest("GET", "https://vault.corp.example:8200/v1/secret/data/app?version=2", nil)
	req.Header.Set("X-Vault-Token", "root-token")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "kv-1") {
		t.Fatalf("GET through the proxy = %d %s", resp.StatusCode, body)
	}
	resp, err = c.Post("https://vault.corp.example:8200/v1/secret/data/app", "application/json", strings.NewReader(`{"data":{"v":1}}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	resp, err = c.Post("https://vault.corp.example:8200/v1/search", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	recs := rec.all()
	if len(recs) != 3 {
		t.Fatalf("records = %+v", recs)
	}
	get, post, search := recs[0], recs[1], recs[2]
	if get.Service != "vault" || get.Scheme != "https" || get.Path != "/v1/secret/data/app" || get.Query != "version=2" || get.Write || get.Status != 200 {
		t.Errorf("GET record = %+v", get)
	}
	if got := get.Header.Get("X-Vault-Token"); got != "[redacted]" {
		t.Errorf("the token reached the record: %q", got)
	}
	if !post.Write || string(post.Body) != `{"data":{"v":1}}` || post.Status != 204 {
		t.Errorf("POST record = %+v", post)
	}
	if search.Write {
		t.Errorf("a POST on a Reads route was recorded as a write: %+v", search)
	}
}

func TestPlainHTTPToADeclaredService(t *testing.T) {
	p, ca, rec := start(t, PolicyRefuse)
	resp, err := client(p, ca).Post("http://plain.corp.example/v1/secret/data/app", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 204 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if r := rec.all(); len(r) != 1 || r[0].Scheme != "http" || r[0].Host != "plain.corp.example:80" || !r[0].Write {
		t.Fatalf("records = %+v", r)
	}
}

func TestUndeclaredDestinationsAreRefusedAndReported(t *testing.T) {
	p, ca, rec := start(t, PolicyRefuse)
	c := client(p, ca)
	if _, err := c.Get("https://api.example.com/v1/x"); err == nil {
		t.Fatal("CONNECT to an undeclared host succeeded")
	}
	resp, err := c.Get("http://api.example.com/v1/y")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("plain http to an undeclared host = %d", resp.StatusCode)
	}
	recs := rec.all()
	if len(recs) != 2 || !recs[0].Refused || recs[0].Host != "api.example.com:443" || !recs[1].Refused || recs[1].Host != "api.example.com:80" {
		t.Fatalf("records = %+v", recs)
	}
	if !strings.Contains(recs[0].String(), "not a declared service") {
		t.Fatalf("record text %q", recs[0].String())
	}
}

func TestDuplicateHostIsAnError(t *testing.T) {
	ca, _ := NewCA()
	v := vault(t)
	w := v
	w.Name = "other"
	if _, err := Start(Options{CA: ca, Services: []Service{v, w}}); err == nil || !strings.Contains(err.Error(), "declared by both") {
		t.Fatalf("err = %v", err)
	}
}

// TestPythonClientsTrustTheRunCA runs unchanged urllib code against https://vault.corp.example:8200 with only
// the environment the proxy gives: the proxy variables and the CA bundle.
func TestPythonClientsTrustTheRunCA(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python")
	}
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not found")
	}
	p, ca, rec := start(t, PolicyRefuse)
	bundle, err := ca.WriteBundle(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(t.TempDir(), "client.py")
	src := `import json, urllib.request, urllib.error, ssl
req = urllib.request.Request("https://vault.corp.example:8200/v1/secret/data/app", headers={"X-Vault-Token": "root-token"})
with urllib.request.urlopen(req, context=ssl.create_default_context(), timeout=10) as r:
    print("urllib", r.status, json.load(r)["data"]["data"]["value"])
try:
    urllib.request.urlopen("https://api.example.com/", timeout=10)
    print("reached api.example.com")
except (urllib.error.URLError, OSError) as e:
    print("refused", type(e).__name__)
try:
    import requests
except ImportError:
    print("requests absent")
else:
    r = requests.post("https://vault.corp.example:8200/v1/secret/data/app", json={"data": {}}, timeout=10)
    print("requests", r.status_code)
`
	if err := os.WriteFile(script, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(py, script)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	for k, v := range p.Env(bundle) {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("client failed: %v\n%s", err, out)
	}
	text := string(out)
	if !strings.Contains(text, "urllib 200 kv-1") || !strings.Contains(text, "refused") {
		t.Fatalf("output:\n%s", text)
	}
	recs := rec.all()
	var refused, served int
	for _, r := range recs {
		if r.Refused {
			refused++
		} else if r.Service == "vault" {
			served++
		}
	}
	want := 1
	if strings.Contains(text, "requests 204") {
		want = 2
	} else if !strings.Contains(text, "requests absent") {
		t.Fatalf("requests neither absent nor served:\n%s", text)
	}
	if refused != 1 || served != want {
		t.Fatalf("records = %+v", recs)
	}
}
