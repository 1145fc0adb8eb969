package conntag

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
)

// keptAlive is three requests on one connection, the way a provider writes them by hand: a bodiless GET,
// a PUT with a Content-Length body (holding a blank line and "GET " to mislead a naive scan) and a chunked
// POST with a trailer.
var keptAlive = []string{
	"GET /v1/a HTTP/1.1\r\nHost: x\r\n\r\n",
	"PUT /v1/b HTTP/1.1\r\nHost: x\r\nContent-Length: 20\r\n\r\n{\"v\":\"\r\n\r\nGET / x\"}\n",
	"POST /v1/c HTTP/1.1\r\nHost: x\r\ntransfer-encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n0\r\nX-T: 1\r\n\r\n",
	"DELETE /v1/d HTTP/1.1\r\nHost: x\r\n\r\n",
}

func starts(reqs []string) []int64 {
	var out []int64
	off := int64(0)
	for _, r := range reqs {
		out = append(out, off)
		off += int64(len(r))
	}
	return out
}

// TestFramerFindsEachRequestStart: whatever the split of the stream into reads (one byte at a time, all at
// once), each request's start is the offset of its first byte.
func TestFramerFindsEachRequestStart(t *testing.T) {
	stream := strings.Join(keptAlive, "")
	want := starts(keptAlive)
	for _, chunk := range []int{1, 2, 7, 64, len(stream)} {
		f := newFramer(0)
		for i := 0; i < len(stream); i += chunk {
			end := min(i+chunk, len(stream))
			f.feed([]byte(stream[i:end]))
		}
		for i, w := range want {
			if got, ok := f.start(i); !ok || got != w {
				t.Errorf("reads of %d: request %d starts at %d (%v), want %d", chunk, i+1, got, ok, w)
			}
		}
		if _, ok := f.start(len(want)); ok {
			t.Errorf("reads of %d: a request beyond the %d sent", chunk, len(want))
		}
	}
}

// TestFramerStopsAtTunnelsAndBadLengths: after a CONNECT the stream is a tunnel (its start is noted); an
// unparsable Content-Length ends the framing; an unknown origin frames nothing.
func TestFramerStopsAtTunnelsAndBadLengths(t *testing.T) {
	connect := "CONNECT objects.example:443 HTTP/1.1\r\nHost: objects.example:443\r\n\r\n"
	f := newFramer(0)
	f.feed([]byte(connect + "GET / HTTP/1.1\r\n\r\n"))
	if at, ok := f.tunnelAt(); !ok || at != int64(len(connect)) {
		t.Errorf("tunnel at %d (%v), want %d", at, ok, len(connect))
	}
	if _, ok := f.start(1); ok {
		t.Error("a request framed inside a tunnel")
	}
	f = newFramer(0)
	f.feed([]byte("PUT / HTTP/1.1\r\nContent-Length: x\r\n\r\nGET / HTTP/1.1\r\n\r\n"))
	if _, ok := f.start(1); ok {
		t.Error("a request framed after an unparsable Content-Length")
	}
	f = newFramer(-1)
	f.feed([]byte(keptAlive[0]))
	if _, ok := f.start(0); ok {
		t.Error("a stream of unknown origin framed a request")
	}
	f = newFramer(100)
	f.feed([]byte(keptAlive[0] + keptAlive[3]))
	if got, _ := f.start(1); got != 100+int64(len(keptAlive[0])) {
		t.Errorf("a stream starting at 100: second request at %d", got)
	}
}

// TestMeteredServerRefsCarryOffsets: an http.Server behind Listen numbers the requests of a kept-alive
// connection and gives each the offset of its first byte, which the Ref's header form carries; a tunnel's
// requests continue after its CONNECT.
func TestMeteredServerRefsCarryOffsets(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &Counter{}
	refs := make(chan Ref, len(keptAlive))
	srv := &http.Server{ConnContext: c.ConnContext, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		refs <- From(r.Context()).Next()
	})}
	go func() { _ = srv.Serve(Listen(ln, c)) }()
	defer srv.Close()
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	br := bufio.NewReader(conn)
	for i, want := range starts(keptAlive) {
		if _, err := io.WriteString(conn, keptAlive[i]); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		r := <-refs
		if r.Request != i+1 || !r.Framed || r.Offset != want {
			t.Errorf("request %d: %+v, want offset %d", i+1, r, want)
		}
		if back, ok := Parse(r.String()); !ok || back != r {
			t.Errorf("Parse(%q) = %+v, %v", r.String(), back, ok)
		}
	}
	parent := &Conn{base: Ref{Listener: 1, Peer: 2, Nth: 1}}
	parent.fr = newFramer(0)
	parent.fr.feed([]byte("CONNECT h:443 HTTP/1.1\r\n\r\n"))
	tun := parent.Tunnel(parent.Next())
	tun.Meter(fakeConn{})
	tun.fr.feed([]byte(keptAlive[0]))
	if r := tun.Next(); r.Request != 2 || !r.Framed || r.Offset != int64(len("CONNECT h:443 HTTP/1.1\r\n\r\n")) {
		t.Errorf("first request in the tunnel: %+v", r)
	}
	unknown := NewConn(Ref{Listener: 1, Peer: 2, Nth: 1, Request: 1})
	unknown.Meter(fakeConn{})
	unknown.fr.feed([]byte(keptAlive[0]))
	if ref := unknown.Next(); ref.Framed {
		t.Errorf("a tunnel of unknown origin gave an offset: %+v", ref)
	}
}

// BenchmarkFramer is what following the framing costs a listener per byte read (docs/performance.md).
func BenchmarkFramer(b *testing.B) {
	stream := []byte(strings.Repeat(strings.Join(keptAlive, ""), 64))
	b.SetBytes(int64(len(stream)))
	for i := 0; i < b.N; i++ {
		f := newFramer(0)
		for off := 0; off < len(stream); off += 4096 {
			f.feed(stream[off:min(off+4096, len(stream))])
		}
	}
}
