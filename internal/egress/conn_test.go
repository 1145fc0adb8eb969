package egress

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/astrabox-dev/astrabox/internal/conntag"
)

// TestRecordsNameTheProviderConnection: the proxy records which provider connection (and which request on
// it) each request came over, hands that to the service's handler in conntag.Header in place of any value
// the client sent, and keeps the header out of the record; a refused CONNECT names its connection too.
func TestRecordsNameTheProviderConnection(t *testing.T) {
	ca, err := NewCA()
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var seen []string
	svc := Service{Name: "plain", Hosts: []string{"plain.corp.example:80"}, Plain: []string{"plain.corp.example:80"},
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			seen = append(seen, r.Header.Get(conntag.Header))
			mu.Unlock()
		})}
	rec := &recorder{}
	p, err := Start(Options{Replica: "r1", Services: []Service{svc}, CA: ca, Observe: rec.add})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	addr := strings.TrimPrefix(p.URL(), "http://")
	listener := func(c net.Conn) int { return c.RemoteAddr().(*net.TCPAddr).Port }
	peer := func(c net.Conn) int { return c.LocalAddr().(*net.TCPAddr).Port }

	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	req := fmt.Sprintf("GET http://plain.corp.example/v1/x HTTP/1.1\r\nHost: plain.corp.example\r\n%s: 1/2/3/4\r\n\r\n", conntag.Header)
	for i := 0; i < 2; i++ {
		if _, err := conn.Write([]byte(req)); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	// Each request names the offset of its first byte in the connection's stream, too.
	want := []conntag.Ref{{Listener: listener(conn), Peer: peer(conn), Nth: 1, Request: 1, Framed: true},
		{Listener: listener(conn), Peer: peer(conn), Nth: 1, Request: 2, Offset: int64(len(req)), Framed: true}}
	conn.Close()

	refused, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(refused, "CONNECT api.example.com:443 HTTP/1.1\r\nHost: api.example.com:443\r\n\r\n")
	if resp, err := http.ReadResponse(bufio.NewReader(refused), nil); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("CONNECT to an undeclared host: %v %+v", err, resp)
	}
	want = append(want, conntag.Ref{Listener: listener(refused), Peer: peer(refused), Nth: 1, Request: 1, Framed: true})
	refused.Close()

	recs := rec.all()
	if len(recs) != 3 {
		t.Fatalf("records = %+v", recs)
	}
	for i, r := range recs {
		if r.Conn != want[i] {
			t.Errorf("record %d (%s): conn %+v, want %+v", i, r, r.Conn, want[i])
		}
		if r.Header.Get(conntag.Header) != "" {
			t.Errorf("record %d keeps the connection header: %v", i, r.Header)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 2 || seen[0] != want[0].String() || seen[1] != want[1].String() {
		t.Errorf("the service saw %q, want %q and %q (the client's value replaced)", seen, want[0], want[1])
	}
}

// TestTLSRequestsCarryPlaintextOffsets: requests written by hand inside TLS on one kept-alive connection,
// to a declared service's direct listener and through a CONNECT tunnel, carry the offset of their first
// byte in the plaintext the client wrote: from 0 on a direct connection, after the CONNECT request in a
// tunnel (which the provider wrote on the same socket first), never counting the TLS records.
func TestTLSRequestsCarryPlaintextOffsets(t *testing.T) {
	p, ca, rec := start(t, PolicyRefuse)
	req := func(i int) string {
		return fmt.Sprintf("POST /v1/secret/data/app HTTP/1.1\r\nHost: vault.corp.example:8200\r\nContent-Length: 12\r\n\r\n{\"data\":%03d}", i)
	}
	talk := func(conn net.Conn, sentBefore int64) []int64 {
		tc := tls.Client(conn, &tls.Config{RootCAs: ca.Pool(), ServerName: "vault.corp.example"})
		br := bufio.NewReader(tc)
		var starts []int64
		off := sentBefore
		for i := 0; i < 3; i++ {
			starts = append(starts, off)
			off += int64(len(req(i)))
			if _, err := io.WriteString(tc, req(i)); err != nil {
				t.Fatal(err)
			}
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		return starts
	}
	direct, err := net.Dial("tcp", p.Routes()["vault.corp.example:8200"])
	if err != nil {
		t.Fatal(err)
	}
	want := talk(direct, 0)
	direct.Close()
	tunnel, err := net.Dial("tcp", strings.TrimPrefix(p.URL(), "http://"))
	if err != nil {
		t.Fatal(err)
	}
	connect := "CONNECT vault.corp.example:8200 HTTP/1.1\r\nHost: vault.corp.example:8200\r\n\r\n"
	if _, err := io.WriteString(tunnel, connect); err != nil {
		t.Fatal(err)
	}
	if resp, err := http.ReadResponse(bufio.NewReader(tunnel), nil); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("CONNECT: %v %+v", err, resp)
	}
	want = append(want, talk(tunnel, int64(len(connect)))...)
	tunnel.Close()
	recs := rec.all()
	if len(recs) != len(want) {
		t.Fatalf("%d records, want %d: %+v", len(recs), len(want), recs)
	}
	for i, r := range recs {
		if !r.Conn.Framed || r.Conn.Offset != want[i] {
			t.Errorf("record %d (%s): conn %+v, want offset %d", i, r, r.Conn, want[i])
		}
	}
}
