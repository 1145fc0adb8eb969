// Package conntag names a TCP connection to one of the kit's loopback listeners (the deployment double's, an
// egress proxy's) the way the harness names it from the other end, so that a request that carries no call
// header can be matched to the connection record the harness sent for it.
//
// The harness reports every loopback TCP connection the provider's process opens with its local port, the
// port it connects to and the call whose code opened it (docs/protocol.md, "Connections"). A listener
// counts the connections it accepts from each peer port: the n-th connection from port P to listener L is
// the n-th connection the harness reported from P to L, whatever the order in which the two sides' records
// reach the platform. Requests are numbered within their connection, from 1.
//
// A connection a listener meters ([Conn.Meter], [Listen]) also counts the plaintext bytes it reads and
// follows the HTTP/1.1 framing, so that each request's [Ref] carries the offset of its first byte: the
// harness reports which call's code sent each run of bytes of the connection, and the platform gives a
// request to the call whose send carried that byte, whichever call opened the connection. A TLS listener
// meters the decrypted stream (wrap the *tls.Conn), since the harness counts what the provider writes
// before encryption.
package conntag

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
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
	// Offset is the plaintext offset of the request's first byte in its connection, when Framed.
	Offset int64 `json:"offset,omitempty"`
	// Framed reports that Offset is known: the connection was metered and its framing followed.
	Framed bool `json:"framed,omitempty"`
}

// Zero reports an unknown connection.
func (r Ref) Zero() bool { return r.Listener == 0 || r.Peer == 0 || r.Nth == 0 }

// String is the header form: "listener/peer/nth/request", with "@offset" when Framed.
func (r Ref) String() string {
	s := fmt.Sprintf("%d/%d/%d/%d", r.Listener, r.Peer, r.Nth, r.Request)
	if r.Framed {
		s += "@" + strconv.FormatInt(r.Offset, 10)
	}
	return s
}

// Parse reads the header form; a malformed value gives the zero Ref and false.
func Parse(s string) (Ref, bool) {
	var r Ref
	base, off, framed := strings.Cut(s, "@")
	if n, err := fmt.Sscanf(base, "%d/%d/%d/%d", &r.Listener, &r.Peer, &r.Nth, &r.Request); err != nil || n != 4 || r.Zero() || r.Request < 1 {
		return Ref{}, false
	}
	if framed {
		o, err := strconv.ParseInt(off, 10, 64)
		if err != nil || o < 0 {
			return Ref{}, false
		}
		r.Offset, r.Framed = o, true
	}
	return r, true
}

// Counter numbers the connections one listener accepts, per peer port. The zero value is ready to use.
type Counter struct {
	mu   sync.Mutex
	seen map[int]int
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
// context, where [From] finds it. A connection [Listen] accepted (already counted and metered) keeps its
// own.
func (c *Counter) ConnContext(ctx context.Context, conn net.Conn) context.Context {
	if m, ok := conn.(*metered); ok {
		return With(ctx, m.tc)
	}
	return With(ctx, c.Accept(conn))
}

// Conn is one accepted connection; it numbers the requests served on it.
type Conn struct {
	base Ref
	reqs atomic.Int64
	fr   *framer // set once by Meter, before the connection's first read
	skip int     // requests numbered before the metered stream began (a tunnel's CONNECT)
	from int64   // the offset of the metered stream's first byte (-1: unknown)
}

// NewConn is a connection whose requests are numbered after the first already served (a CONNECT tunnel
// continues the numbering of the request that opened it). Its byte offsets are unknown; see [Conn.Tunnel].
func NewConn(base Ref) *Conn {
	c := &Conn{base: base, from: -1}
	c.reqs.Store(int64(base.Request))
	return c
}

// Tunnel is the connection inside the CONNECT tunnel that c's request ref opened: its requests continue
// ref's numbering and, once metered, its offsets continue after the CONNECT request, as the provider's
// side counts them (what it writes inside the tunnel follows its CONNECT on the same socket).
func (c *Conn) Tunnel(ref Ref) *Conn {
	t := NewConn(ref)
	if c != nil && c.fr != nil {
		if at, ok := c.fr.tunnelAt(); ok {
			t.from = at
		}
	}
	return t
}

// Next is the Ref of the next request on the connection.
func (c *Conn) Next() Ref {
	if c == nil {
		return Ref{}
	}
	r := c.base
	r.Request = int(c.reqs.Add(1))
	if c.fr != nil {
		r.Offset, r.Framed = c.fr.start(r.Request - 1 - c.skip)
	}
	return r
}

// Meter returns conn reading through a byte counter that follows the HTTP/1.1 framing of what it reads,
// so that the requests [Conn.Next] numbers from then on carry their start offset. Wrap the plaintext side
// (for TLS, the *tls.Conn). Call it once per connection, before serving it.
func (c *Conn) Meter(conn net.Conn) net.Conn {
	c.fr = newFramer(c.from)
	c.skip = int(c.reqs.Load())
	return &metered{Conn: conn, tc: c}
}

// metered is a connection whose reads feed its framer.
type metered struct {
	net.Conn
	tc *Conn
}

// NetConn returns the connection underneath, as tls.Conn's NetConn does (a stub's connection-reset fault
// reaches the TCP socket through it).
func (m *metered) NetConn() net.Conn { return m.Conn }

// Read reads from the connection and follows the framing of what it read.
func (m *metered) Read(p []byte) (int, error) {
	n, err := m.Conn.Read(p)
	if n > 0 {
		m.tc.fr.feed(p[:n])
	}
	return n, err
}

// Listen wraps a listener so that each connection it accepts is counted by c and metered; pair it with
// c.ConnContext.
func Listen(ln net.Listener, c *Counter) net.Listener { return &listener{Listener: ln, c: c} }

type listener struct {
	net.Listener
	c *Counter
}

// Accept accepts, counts and meters the next connection.
func (l *listener) Accept() (net.Conn, error) {
	conn, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return l.c.Accept(conn).Meter(conn), nil
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
