package conntag

import (
	"context"
	"net"
	"testing"
)

func TestRefHeaderForm(t *testing.T) {
	r := Ref{Listener: 40000, Peer: 51000, Nth: 2, Request: 3}
	got, ok := Parse(r.String())
	if !ok || got != r {
		t.Fatalf("Parse(%q) = %+v, %v", r.String(), got, ok)
	}
	for _, bad := range []string{"", "1/2/3", "0/2/3/1", "1/0/3/1", "1/2/0/1", "1/2/3/0", "a/b/c/d"} {
		if ref, ok := Parse(bad); ok || !ref.Zero() {
			t.Errorf("Parse(%q) = %+v, %v; want a refusal", bad, ref, ok)
		}
	}
}

// TestCounterNumbersConnectionsPerPeer: a listener counts its connections per peer port, and each
// connection its requests, from 1; a tunnel continues the numbering of the request that opened it.
func TestCounterNumbersConnectionsPerPeer(t *testing.T) {
	var c Counter
	conn := func(peer int) net.Conn {
		return fakeConn{local: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9000}, remote: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: peer}}
	}
	a1, b1, a2 := c.Accept(conn(5000)), c.Accept(conn(6000)), c.Accept(conn(5000))
	if r := a1.Next(); r != (Ref{Listener: 9000, Peer: 5000, Nth: 1, Request: 1}) {
		t.Errorf("first request of the first connection from 5000: %+v", r)
	}
	if r := a1.Next(); r.Request != 2 {
		t.Errorf("second request numbered %d", r.Request)
	}
	if r := b1.Next(); r.Nth != 1 || r.Peer != 6000 {
		t.Errorf("first connection from 6000: %+v", r)
	}
	if r := a2.Next(); r.Nth != 2 || r.Request != 1 {
		t.Errorf("second connection from 5000 (the port reused): %+v", r)
	}
	tunnel := NewConn(Ref{Listener: 9000, Peer: 5000, Nth: 1, Request: 1})
	if r := tunnel.Next(); r.Request != 2 || r.Nth != 1 {
		t.Errorf("first request inside the tunnel: %+v", r)
	}
	ctx := c.ConnContext(context.Background(), conn(7000))
	if r := From(ctx).Next(); r.Peer != 7000 || r.Nth != 1 {
		t.Errorf("ConnContext: %+v", r)
	}
	if r := From(context.Background()).Next(); !r.Zero() {
		t.Errorf("no connection in the context gave %+v", r)
	}
}

type fakeConn struct {
	net.Conn
	local, remote net.Addr
}

func (f fakeConn) LocalAddr() net.Addr  { return f.local }
func (f fakeConn) RemoteAddr() net.Addr { return f.remote }
