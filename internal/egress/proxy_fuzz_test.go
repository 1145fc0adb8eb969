package egress

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/astrabox-dev/astrabox/internal/stubs"
)

// FuzzProxyRequest writes any bytes, as a provider's client would, to the proxy's own port and to a declared
// plain-HTTP service's direct listener, then ends the stream. Whatever arrives, the proxy answers with
// well-formed HTTP or closes the connection within a bound (never hangs), and every record it makes is
// sound: the destination lower-cased with a port, a refused destination never answered by a service, a
// credential header never recorded in the clear, and a body within the limit. Inputs that name a loopback
// destination are left out: the proxy passes those through by design, and a fuzzer has no business dialling
// the machine's own ports.
func FuzzProxyRequest(f *testing.F) {
	f.Add([]byte("GET http://plain.corp.example/v1/search HTTP/1.1\r\nHost: plain.corp.example\r\nAuthorization: Bearer s3cr3t\r\n\r\n"))
	f.Add([]byte("POST http://plain.corp.example:80/v1/secret/data/app HTTP/1.1\r\nHost: plain.corp.example\r\nContent-Length: 5\r\n\r\nhello"))
	f.Add([]byte("GET http://api.elsewhere.example/x?y=1 HTTP/1.1\r\nHost: api.elsewhere.example\r\nCookie: a=b\r\n\r\n"))
	f.Add([]byte("CONNECT vault.corp.example:8200 HTTP/1.1\r\nHost: vault.corp.example:8200\r\n\r\n\x16\x03\x01\x00\x05hello"))
	f.Add([]byte("CONNECT api.elsewhere.example:443 HTTP/1.1\r\nHost: api.elsewhere.example:443\r\n\r\n"))
	f.Add([]byte("POST /v1/search HTTP/1.1\r\nHost: plain.corp.example\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\nGET /v1/secret/data/app HTTP/1.1\r\nHost: plain.corp.example\r\nX-Vault-Token: root-token\r\n\r\n"))
	f.Add([]byte("GET / HTTP/1.0\r\n\r\n"))
	f.Add([]byte("G\x00T http://PLAIN.corp.example/ HTTP/1.1\r\n\r\n"))
	ms, err := stubs.Parse("vault.json", []byte(`{"mappings": [
	  {"request": {"method": "GET", "urlPathPattern": "/v1/secret/data/.+"}, "response": {"status": 200, "jsonBody": {"value": "kv-1"}}},
	  {"request": {"method": "POST", "urlPath": "/v1/search"}, "response": {"status": 200, "jsonBody": []}}
	]}`), nil)
	if err != nil {
		f.Fatal(err)
	}
	ca, err := NewCA()
	if err != nil {
		f.Fatal(err)
	}
	recs := make(chan Record, 1024)
	const maxBody = 1024
	p, err := Start(Options{Replica: "r1", CA: ca, Policy: PolicyRefuse, MaxBody: maxBody, Observe: func(r Record) { recs <- r },
		Services: []Service{{Name: "vault", Hosts: []string{"vault.corp.example:8200", "plain.corp.example:80"}, Plain: []string{"plain.corp.example:80"},
			Handler: stubs.NewSet(ms), Reads: []Route{{Method: "POST", PathPrefix: "/v1/search"}}}}})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { p.Close() })
	direct := p.Routes()["plain.corp.example:80"]
	f.Fuzz(func(t *testing.T, raw []byte) {
		low := strings.ToLower(string(raw))
		for _, loop := range []string{"localhost", "127.", "[", "::", ":0:", "7f00", "0.0.0.0"} {
			if strings.Contains(low, loop) || len(raw) > 16<<10 {
				return
			}
		}
		for _, addr := range []string{p.ln.Addr().String(), direct} {
			exchange(t, addr, raw)
		}
		for {
			select {
			case r := <-recs:
				checkRecord(t, r, maxBody)
			default:
				return
			}
		}
	})
}

// exchange sends raw on a fresh connection to addr, ends the stream and reads the answer, failing the test
// when the proxy neither answers well-formed HTTP nor closes within the bound.
func exchange(t *testing.T, addr string, raw []byte) {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	_, _ = conn.Write(raw)
	_ = conn.(*net.TCPConn).CloseWrite()
	out, err := io.ReadAll(conn)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("%s: no answer and no close within 10s for %q", addr, raw)
	}
	if len(out) == 0 {
		return
	}
	if bytes.HasPrefix(out, []byte("HTTP/1.1 200 Connection Established\r\n\r\n")) {
		return // a tunnel: what follows is TLS or the destination's own bytes
	}
	if _, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(out)), nil); err != nil {
		t.Fatalf("%s: the answer to %q is not HTTP (%v): %q", addr, raw, err, out)
	}
}

func checkRecord(t *testing.T, r Record, maxBody int) {
	if r.Host != strings.ToLower(r.Host) {
		t.Fatalf("record host %q is not lower-case", r.Host)
	}
	if _, _, err := net.SplitHostPort(r.Host); err != nil {
		t.Fatalf("record host %q has no port: %v", r.Host, err)
	}
	if r.Refused && r.Service != "" {
		t.Fatalf("refused, yet answered by %s: %+v", r.Service, r)
	}
	if !r.Refused && r.Service == "" && r.Method != http.MethodConnect {
		t.Fatalf("neither refused nor a service's, on a refusing proxy: %+v", r)
	}
	if len(r.Body) > maxBody {
		t.Fatalf("recorded a body of %d bytes, above the limit %d", len(r.Body), maxBody)
	}
	for _, k := range credentialHeaders {
		for _, v := range r.Header.Values(k) {
			if v != "[redacted]" {
				t.Fatalf("credential header %s recorded in the clear: %q", k, v)
			}
		}
	}
	for k, vs := range r.Header {
		if http.CanonicalHeaderKey(k) != k {
			for _, c := range credentialHeaders {
				if strings.EqualFold(k, c) && len(vs) > 0 && vs[0] != "[redacted]" {
					t.Fatalf("credential header %q recorded in the clear: %q", k, vs)
				}
			}
		}
	}
}
