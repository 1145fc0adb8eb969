package egress

import (
	"bufio"
	"fmt"
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
	for i := 0; i < 2; i++ {
		fmt.Fprintf(conn, "GET http://plain.corp.example/v1/x HTTP/1.1\r\nHost: plain.corp.example\r\n%s: 1/2/3/4\r\n\r\n", conntag.Header)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	want := []conntag.Ref{{Listener: listener(conn), Peer: peer(conn), Nth: 1, Request: 1}, {Listener: listener(conn), Peer: peer(conn), Nth: 1, Request: 2}}
	conn.Close()

	refused, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(refused, "CONNECT api.example.com:443 HTTP/1.1\r\nHost: api.example.com:443\r\n\r\n")
	if resp, err := http.ReadResponse(bufio.NewReader(refused), nil); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("CONNECT to an undeclared host: %v %+v", err, resp)
	}
	want = append(want, conntag.Ref{Listener: listener(refused), Peer: peer(refused), Nth: 1, Request: 1})
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
