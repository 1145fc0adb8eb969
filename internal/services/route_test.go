package services

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/astrabox-dev/astrabox/internal/double"
	"github.com/astrabox-dev/astrabox/internal/egress"
)

// TestServiceThroughProxyAndDouble plays the whole path a provider's request takes: an https:// call to the
// production host, the replica's egress proxy, the double's listener of that replica (recording, faults), the
// service's stubs.
func TestServiceThroughProxyAndDouble(t *testing.T) {
	wd, _ := os.Getwd()
	spec := Spec{Name: "oauth", URLs: []string{"https://login.corp.example"}, Hosts: []string{"login.corp.example:443"},
		Stubs: filepath.Join(wd, "testdata/stubs"), SecretFields: DefaultSecretFields}
	si, err := Start(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	dbl, err := double.Start(double.Options{Upstreams: map[string]double.Upstream{"oauth": Upstream(spec, si)}})
	if err != nil {
		t.Fatal(err)
	}
	defer dbl.Close()
	base, _ := dbl.URL("r2")
	svc, err := ThroughDouble(spec, base)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := egress.NewCA()
	p, err := egress.Start(egress.Options{Replica: "r2", Services: []egress.Service{svc}, CA: ca})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	pu, _ := url.Parse(p.URL())
	c := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(pu), TLSClientConfig: &tls.Config{RootCAs: ca.Pool()}, DisableKeepAlives: true}}

	dbl.SetInFlight("r2", double.Call{Callback: "prepare_session", CallID: "c7"})
	post := func() (*http.Response, error) {
		req, _ := http.NewRequest("POST", "https://login.corp.example/oauth2/token", strings.NewReader("grant_type=client_credentials"))
		req.Header.Set(double.ServiceHeader, "spoofed")
		return c.Do(req)
	}
	resp, err := post()
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "stub-access-token-1") {
		t.Fatalf("token = %d %s", resp.StatusCode, body)
	}
	dbl.AddFault(double.Fault{Kind: double.DropAfterApply, Times: 1})
	if _, err := post(); err == nil {
		t.Fatal("a dropped answer reached the client")
	}
	reqs := dbl.Requests()
	if len(reqs) != 2 {
		t.Fatalf("double recorded %d requests", len(reqs))
	}
	r := reqs[0]
	if r.Service != "oauth" || r.Host != "login.corp.example:443" || r.Path != "/oauth2/token" || !r.Applied || r.Replica != "r2" || r.Call == nil || r.Call.CallID != "c7" {
		t.Fatalf("record = %+v", r)
	}
	if !reqs[1].Dropped || !reqs[1].Applied {
		t.Fatalf("dropped record = %+v", reqs[1])
	}
}
