package double

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/astrabox-dev/astrabox/internal/conntag"
)

// TestRequestsNameTheirConnection: each request records the provider's connection it came over (listener
// port, peer port, the connection's number among that peer's, the request's number on it), so that the
// platform can match it to the harness's connection records; a forwarded request records the connection
// the proxy names (its offset too), and a provider cannot name one on the double's own endpoints. Each
// request also carries the offset of its first byte in the connection's stream.
func TestRequestsNameTheirConnection(t *testing.T) {
	d := newDouble(t, Options{})
	base := baseURL(t, d, "r1")
	addr := strings.TrimPrefix(base, "http://")
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	br := bufio.NewReader(conn)
	forged := conntag.Ref{Listener: 1, Peer: 2, Nth: 3, Request: 1}.String()
	var starts []int64
	sent := int64(0)
	for i := 0; i < 2; i++ {
		req := fmt.Sprintf("GET /v1/records/k%d HTTP/1.1\r\nHost: %s\r\n%s: %s\r\n\r\n", i, addr, conntag.Header, forged)
		starts = append(starts, sent)
		sent += int64(len(req))
		if _, err := conn.Write([]byte(req)); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	listener := conn.RemoteAddr().(*net.TCPAddr).Port
	peer := conn.LocalAddr().(*net.TCPAddr).Port
	reqs := d.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	for i, rq := range reqs {
		want := conntag.Ref{Listener: listener, Peer: peer, Nth: 1, Request: i + 1, Offset: starts[i], Framed: true}
		if rq.Conn != want {
			t.Errorf("request %d: conn %+v, want %+v", i+1, rq.Conn, want)
		}
	}

	d2 := newDouble(t, Options{Upstreams: map[string]Upstream{"vault": {Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {})}}})
	u := baseURL(t, d2, "r1")
	named := conntag.Ref{Listener: 4000, Peer: 5000, Nth: 1, Request: 2, Offset: 181, Framed: true}
	must(t, 200, "GET", u+"/v1/secret", "", ServiceHeader, "vault", conntag.Header, named.String())
	must(t, 200, "GET", u+"/v1/secret", "", ServiceHeader, "vault")
	got := d2.Requests()
	if got[0].Conn != named {
		t.Errorf("forwarded request: conn %+v, want the proxy's %+v", got[0].Conn, named)
	}
	if !got[1].Conn.Zero() {
		t.Errorf("forwarded request without the proxy's header: conn %+v, want none (the proxy's own connection)", got[1].Conn)
	}
}
