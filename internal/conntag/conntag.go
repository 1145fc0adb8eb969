// Package conntag names a TCP connection to one of the kit's loopback listeners (the deployment double's, an
// egress proxy's) the way the harness names it from the other end, so that a request that carries no call
// header can be matched to the connection record the harness sent for it.
//
// The harness reports every loopback TCP connection the provider's process opens with its local port, the
// port it connects to and the call whose code opened it (docs/protocol.md, "Connections"). A listener
// counts the connections it accepts from each peer port: the n-th connection from port P to listener L is
// the n-th connection the harness reported from P to L, whatever the order in which the two sides' records
// reach the platform. Requests are numbered within their connection, from 1.
package conntag

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
)

// Header carries a [Ref] from the egress proxy to the double, for requests the proxy forwards: the double
// then records the provider's connection to the proxy instead of the proxy's own connection to it.
const Header = "X-Astrabox-Conn"

// Ref identifies one request on one accepted connection.
type Ref struct {
	// Listener is the port of the kit's listener that accepted the connection.
	Listener int `json:"listener"`
	// Peer is the connection's remote (the provider's local) port.
	Peer int `json:"peer"`
	// Nth counts the connections this listener accepted from Peer, from 1.
	Nth int `json:"nth"`
	// Request numbers the request within its connection, from 1 (a CONNECT counts as one).
	Request int `json:"request"`
}

// Zero reports an unknown connection.
func (r Ref) Zero() bool { return r.Listener == 0 || r.Peer == 0 || r.Nth == 0 }

// String is the header form: "listener/peer/nth/request".
func (r Ref) String() string {
	return fmt.Sprintf("%d/%d/%d/%d", r.Listener, r.Peer, r.Nth, r.Request)
}

// Parse reads the header form; a malformed value gives the zero Ref and false.
func Parse(s string) (Ref, bool) {
	var r Ref
	if n, err := fmt.Sscanf(s, "%d/%d/%d/%d", &r.Listener, &r.Peer, &r.Nth, &r.Request); err != nil || n != 4 || r.Zero() || r.Request < 1 {
		return Ref{}, false
	}
	return r, true
}

// Counter numbers the connections one listener accepts, per peer port. The zero value is ready to use.
type Counter struct {
	mu    sync.Mutex
	seen  map[int]int
	local int
}

// Accept counts a newly accepted connection and returns its [Conn].
func (c *Counter) Accept(conn net.Conn) *Conn {
	local, peer := port(conn.LocalAddr()), port(conn.RemoteAddr())
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seen == nil {
		c.seen = map[int]int{}
	}
	c.seen[peer]++
	return &Conn{base: Ref{Listener: local, Peer: peer, Nth: c.seen[peer]}}
}

// ConnContext is an http.Server ConnContext that counts the connection and keeps its [Conn] in the
// context, where [From] finds it.
func (c *Counter) ConnContext(ctx context.Context, conn net.Conn) context.Context {
	return With(ctx, c.Accept(conn))
}

// Conn is one accepted connection; it numbers the requests served on it.
type Conn struct {
	base Ref
	reqs atomic.Int64
}

// NewConn is a connection whose requests are numbered after the first already served (a CONNECT tunnel
// continues the numbering of the request that opened it).
func NewConn(base Ref) *Conn {
	c := &Conn{base: base}
	c.reqs.Store(int64(base.Request))
	return c
}

// Next is the Ref of the next request on the connection.
func (c *Conn) Next() Ref {
	if c == nil {
		return Ref{}
	}
	r := c.base
	r.Request = int(c.reqs.Add(1))
	return r
}

type ctxKey struct{}

// With keeps a connection in a context.
func With(ctx context.Context, c *Conn) context.Context { return context.WithValue(ctx, ctxKey{}, c) }

// From returns the connection kept in ctx, or nil.
func From(ctx context.Context) *Conn {
	c, _ := ctx.Value(ctxKey{}).(*Conn)
	return c
}

func port(a net.Addr) int {
	if t, ok := a.(*net.TCPAddr); ok {
		return t.Port
	}
	if a == nil {
		return 0
	}
	_, p, err := net.SplitHostPort(a.String())
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(p)
	return n
}
