package bench

import (
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/astrabox-dev/astrabox/internal/double"
	"github.com/astrabox-dev/astrabox/internal/egress"
	"github.com/astrabox-dev/astrabox/internal/services"
)

// BenchmarkEgressProxy measures what a declared service costs a provider per request: the same POST made
// through the replica's egress proxy (TLS terminated with the run's CA, then the scenario's double, which
// records it, then the stand-in) against the same request made directly to the stand-in over loopback HTTP,
// both on kept-alive connections. Reported: medians of each and of the difference (target: at most 0.5 ms
// added, docs/performance.md).
func BenchmarkEgressProxy(b *testing.B) {
	direct := httptest.NewServer(okStand)
	defer direct.Close()
	px, ca := proxiedService(b, "vault", "vault.corp.example:8200")
	pu, _ := url.Parse(px.URL())
	viaProxy := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(pu), TLSClientConfig: &tls.Config{RootCAs: ca.Pool()}}}
	plain := &http.Client{Transport: &http.Transport{}}
	post := func(c *http.Client, target string) time.Duration {
		start := time.Now()
		resp, err := c.Post(target, "application/json", strings.NewReader(`{"data":{"value":"v"}}`))
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return time.Since(start)
	}
	const n = 400
	var proxied, straight, added []float64
	for i := 0; i < b.N; i++ {
		post(viaProxy, "https://vault.corp.example:8200/v1/secret/data/app") // warm the tunnel and TLS session
		post(plain, direct.URL+"/v1/secret/data/app")
		for j := 0; j < n; j++ {
			p := post(viaProxy, "https://vault.corp.example:8200/v1/secret/data/app")
			d := post(plain, direct.URL+"/v1/secret/data/app")
			proxied = append(proxied, us(p))
			straight = append(straight, us(d))
			added = append(added, us(p)-us(d))
		}
	}
	b.ReportMetric(median(proxied), "µs/proxied")
	b.ReportMetric(median(straight), "µs/direct")
	b.ReportMetric(median(added), "µs/added")
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

// BenchmarkAttributionCost measures what attribution adds to a provider's request (issue 26, target: at most
// 0.5 ms): the same PUT on a kept-alive TLS connection through a replica's egress proxy, made by the same
// Python client in two processes, one bare and one with the harness's observer installed and the requests
// made inside a call (scripts/attribution_cost.py): http.client over a CONNECT tunnel (ssl.SSLSocket) and,
// where /usr/bin/python3 has it, httpx's async client (TLS over memory BIOs). Reported: the best batch median
// of each, and the difference.
func BenchmarkAttributionCost(b *testing.B) {
	px, ca := proxiedService(b, "ledger", "ledger.corp.example:443")
	caFile := filepath.Join(b.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, ca.PEM(), 0o600); err != nil {
		b.Fatal(err)
	}
	python := "/usr/bin/python3"
	if _, err := os.Stat(python); err != nil {
		python = "python3"
	}
	run := func(mode string) map[string]float64 {
		out, err := exec.Command(python, "../../scripts/attribution_cost.py", "../harness/python", px.URL(), caFile,
			"ledger.corp.example:443", mode, "200").Output()
		if err != nil {
			b.Fatalf("%s: %v", mode, err)
		}
		got := map[string]float64{}
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			var name string
			var v float64
			if _, err := fmt.Sscanf(line, "%s %f", &name, &v); err == nil {
				got[name] = v
			}
		}
		return got
	}
	var bare, attributed map[string]float64
	for i := 0; i < b.N; i++ {
		bare, attributed = run("bare"), run("attributed")
	}
	for _, client := range []string{"http.client", "httpx-async"} {
		if _, ok := bare[client]; !ok {
			continue
		}
		b.ReportMetric(bare[client], "µs/bare-"+client)
		b.ReportMetric(attributed[client], "µs/attributed-"+client)
		b.ReportMetric(attributed[client]-bare[client], "µs/added-"+client)
	}
}

// okStand is the stand-in of the proxy benchmarks: it reads the request and answers a small JSON document.
var okStand = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(`{"ok":true}`))
})

// proxiedService starts a double whose declared service name (at host, "name:port") is served by okStand,
// and replica r1's egress proxy for it, both closed when the benchmark ends.
func proxiedService(b *testing.B, name, host string) (*egress.Proxy, *egress.CA) {
	b.Helper()
	spec := services.Spec{Name: name, URLs: []string{"https://" + host}, Hosts: []string{host}}
	dbl, err := double.Start(double.Options{Upstreams: map[string]double.Upstream{name: {Handler: okStand}}, MaxBody: 1 << 20})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = dbl.Close() })
	base, _ := dbl.URL("r1")
	svc, err := services.ThroughDouble(spec, base)
	if err != nil {
		b.Fatal(err)
	}
	ca, _ := egress.NewCA()
	px, err := egress.Start(egress.Options{Replica: "r1", Services: []egress.Service{svc}, CA: ca})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { px.Close() })
	return px, ca
}
