package egress

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/astrabox-dev/astrabox/internal/conntag"
)

// Policy says what happens to a connection to a destination that is not a declared service.
type Policy string

// The egress policies.
const (
	// PolicyRefuse refuses and reports every non-loopback destination that is not a declared service (the
	// default: a CI run never reaches a real system by accident).
	PolicyRefuse Policy = "refuse"
	// PolicyAllow lets such connections through, still recorded (`egress = "allow"`).
	PolicyAllow Policy = "allow"
)

// Service is one of the provider's external systems as the proxy sees it: the production host:port pairs it
// answers on and the handler that stands in for it.
type Service struct {
	Name string
	// Hosts are lower-case "host:port" pairs, from the service's declared base URLs.
	Hosts []string
	// Handler answers the service's requests (stubs, a reverse proxy to the author's fake, the double).
	Handler http.Handler
	// Reads are routes whose requests are reads although their method writes (a POST search).
	Reads []Route
	// Plain lists the hosts (of Hosts) that speak plain HTTP (from http:// base URLs); the others speak TLS.
	Plain []string
}

// Route names requests by method and path prefix.
type Route struct {
	Method     string
	PathPrefix string
}

// Record is one request that reached the proxy, in arrival order.
type Record struct {
	Seq     int
	Replica string
	// Service is the declared service that answered, "" for a refused or passed-through destination.
	Service string
	Scheme  string
	// Host is the destination as the client named it (host:port).
	Host   string
	Method string
	Path   string
	Query  string
	// Header holds the request headers with credentials replaced by a marker (see Redact).
	Header http.Header
	Body   []byte
	Status int
	// Write reports a request that changes the service's state: any method but GET, HEAD and OPTIONS,
	// unless a Reads route says otherwise.
	Write bool
	// Refused reports a connection to an undeclared destination that the policy refused.
	Refused bool
	// Conn names the provider's connection to the proxy and the request's place on it, for matching with
	// the harness's connection records (which call and which line opened it).
	Conn conntag.Ref
}

// Options configure one replica's proxy.
type Options struct {
	Replica  string
	Services []Service
	CA       *CA
	Policy   Policy
	// Observe receives every record as it completes; it must not block for long.
	Observe func(Record)
	// MaxBody bounds the request body recorded and forwarded (default 8 MiB).
	MaxBody int64
}

// Proxy is a running HTTP proxy on a loopback port.
type Proxy struct {
	o      Options
	ln     net.Listener
	srv    *http.Server
	hosts  map[string]*Service
	mu     sync.Mutex
	seq    int
	conns  sync.WaitGroup
	live   map[net.Conn]struct{} // the connections counted in conns, closed by Close; guarded by mu
	closed chan struct{}
	// direct are the listeners for clients that ignore the proxy variables: one loopback port per declared
	// host, where the harness sends connections it resolves for that host.
	direct map[string]net.Listener
}

// Start listens on a free loopback port and serves until Close.
func Start(o Options) (*Proxy, error) {
	if o.CA == nil {
		return nil, errors.New("egress proxy needs the run's certificate authority")
	}
	if o.Policy == "" {
		o.Policy = PolicyRefuse
	}
	if o.MaxBody <= 0 {
		o.MaxBody = 8 << 20
	}
	p := &Proxy{o: o, hosts: map[string]*Service{}, closed: make(chan struct{}), live: map[net.Conn]struct{}{}}
	for i := range o.Services {
		s := &o.Services[i]
		for _, h := range s.Hosts {
			h = strings.ToLower(h)
			if prev, dup := p.hosts[h]; dup {
				return nil, fmt.Errorf("host %s is declared by both services %s and %s", h, prev.Name, s.Name)
			}
			p.hosts[h] = s
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("start the egress proxy: %w", err)
	}
	p.ln = ln
	counter := &conntag.Counter{}
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 30 * time.Second, ConnContext: counter.ConnContext}
	go func() { _ = p.srv.Serve(conntag.Listen(ln, counter)) }()
	if err := p.listenDirect(); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

// listenDirect opens one loopback listener per declared host: a connection accepted there is treated as if
// the client had asked the proxy for a tunnel to that host (TLS terminated with the run's CA, or plain HTTP
// for an http:// service), so clients that never read HTTP(S)_PROXY (http.client, asyncio streams, raw
// sockets) reach the same service, recorded the same way.
func (p *Proxy) listenDirect() error {
	p.direct = map[string]net.Listener{}
	plain := map[string]bool{}
	for _, s := range p.o.Services {
		for _, h := range s.Plain {
			plain[strings.ToLower(h)] = true
		}
	}
	for host, s := range p.hosts {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return fmt.Errorf("start the egress proxy: %w", err)
		}
		p.direct[host] = ln
		go p.acceptDirect(ln, s, host, plain[host])
	}
	return nil
}

func (p *Proxy) acceptDirect(ln net.Listener, s *Service, host string, plain bool) {
	var counter conntag.Counter
	for {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		tc := counter.Accept(conn)
		if !p.track(conn) {
			conn.Close()
			return
		}
		go func() {
			defer p.untrack(conn)
			defer conn.Close()
			if plain {
				p.servePlain(tc.Meter(conn), tc, s, host)
				return
			}
			p.terminate(conn, tc, s, host)
		}()
	}
}

// servePlain serves the plain-HTTP requests of one direct connection.
func (p *Proxy) servePlain(conn net.Conn, tc *conntag.Conn, s *Service, host string) {
	p.serveConn(conn, tc, func(w http.ResponseWriter, r *http.Request) {
		p.serveService(w, r, s, "http", host, conntag.From(r.Context()).Next())
	})
}

// serveConn serves the HTTP/1.1 requests of one connection (a terminated tunnel or a direct connection)
// until the client closes it or the proxy closes; tc numbers its requests.
func (p *Proxy) serveConn(conn net.Conn, tc *conntag.Conn, h http.HandlerFunc) {
	inner := &http.Server{Handler: h, ReadHeaderTimeout: 30 * time.Second,
		ConnContext: func(ctx context.Context, _ net.Conn) context.Context { return conntag.With(ctx, tc) }}
	ln := &oneConnListener{conn: conn, done: make(chan struct{})}
	go func() {
		select {
		case <-p.closed:
		case <-ln.done:
		}
		_ = inner.Close()
	}()
	_ = inner.Serve(ln)
	<-ln.done
}

// Routes maps each declared host:port to the loopback address of its direct listener.
func (p *Proxy) Routes() map[string]string {
	out := make(map[string]string, len(p.direct))
	for h, ln := range p.direct {
		out[h] = ln.Addr().String()
	}
	return out
}

// URL is the proxy's address as HTTP_PROXY takes it.
func (p *Proxy) URL() string { return "http://" + p.ln.Addr().String() }

// The variables the harness reads to route clients that ignore the proxy variables (its egress module).
const (
	// RoutesEnv holds a JSON object mapping each declared "host:port" to its direct loopback listener.
	RoutesEnv = "ASTRABOX_EGRESS_ROUTES"
	// ProxyEnv is the proxy's loopback address, where the harness reports a refused destination.
	ProxyEnv = "ASTRABOX_EGRESS_PROXY"
	// PolicyEnv is the egress policy ("refuse" or "allow").
	PolicyEnv = "ASTRABOX_EGRESS_POLICY"
	// CABundleEnv is the run's CA bundle, for the harness: certifi.where() answers it in the replica, and a
	// verification failure is reported against it (the harness's trust module).
	CABundleEnv = "ASTRABOX_EGRESS_CA_BUNDLE"
)

// CABundleVars are the variables that name the run's CA bundle in a replica, one per way a Python client
// finds its trusted roots: OpenSSL's default verify paths (the ssl module's default context: urllib,
// http.client, aiohttp, httpx with trust_env), requests (and hvac, which uses it), curl and pycurl, botocore
// (which hands certifi's or its own bundle to the TLS context and reads no other variable), and grpc's C core.
// Clients that pass certifi.where() explicitly are covered by the harness (CABundleEnv).
var CABundleVars = []string{"SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "AWS_CA_BUNDLE", "GRPC_DEFAULT_SSL_ROOTS_FILE_PATH", CABundleEnv}

// Env is the environment a replica needs to send its traffic through the proxy and trust its certificates:
// both spellings of the proxy variables (loopback excluded, so the kit's own double is reached directly) and
// the CA bundle in every variable of CABundleVars.
func (p *Proxy) Env(caBundle string) map[string]string {
	env := map[string]string{}
	for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"} {
		env[k] = p.URL()
	}
	for _, k := range []string{"NO_PROXY", "no_proxy"} {
		env[k] = "localhost,127.0.0.1,::1"
	}
	if routes, err := json.Marshal(p.Routes()); err == nil {
		env[RoutesEnv] = string(routes)
	}
	env[ProxyEnv] = p.ln.Addr().String()
	env[PolicyEnv] = string(p.o.Policy)
	if caBundle != "" {
		for _, k := range CABundleVars {
			env[k] = caBundle
		}
	}
	return env
}

// track counts a connection the proxy serves outside its server (a direct or tunnelled one), so that Close
// can close it; it reports false once the proxy is closed.
func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.closed:
		return false
	default:
	}
	p.live[c] = struct{}{}
	p.conns.Add(1)
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.live, c)
	p.mu.Unlock()
	p.conns.Done()
}

// CloseBound bounds how long Close waits for the proxy's connections to end after it closed them.
const CloseBound = 2 * time.Second

// Close stops the proxy: it closes every connection it serves (a TLS handshake the client stalls, a tunnel,
// a request a service has not answered yet) and waits for them, at most CloseBound each for the server's
// shutdown and for its own connections; an error names how many were left behind.
func (p *Proxy) Close() error {
	p.mu.Lock()
	select {
	case <-p.closed:
		p.mu.Unlock()
		return nil
	default:
	}
	close(p.closed)
	live := make([]net.Conn, 0, len(p.live))
	for c := range p.live {
		live = append(live, c)
	}
	p.mu.Unlock()
	for _, ln := range p.direct {
		_ = ln.Close()
	}
	for _, c := range live {
		_ = c.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), CloseBound)
	defer cancel()
	err := p.srv.Shutdown(ctx)
	if err != nil {
		_ = p.srv.Close()
	}
	waited := make(chan struct{})
	go func() { p.conns.Wait(); close(waited) }()
	t := time.NewTimer(CloseBound)
	defer t.Stop()
	select {
	case <-waited:
		return nil
	case <-t.C:
		p.mu.Lock()
		n := len(p.live)
		p.mu.Unlock()
		return fmt.Errorf("egress proxy of replica %s: %d connection(s) still open %s after it closed them", p.o.Replica, n, CloseBound)
	}
}

// ServeHTTP handles CONNECT tunnels and absolute-form proxy requests.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ref := conntag.From(r.Context()).Next()
	if r.Method == http.MethodConnect {
		p.connect(w, r, ref)
		return
	}
	if !r.URL.IsAbs() {
		http.Error(w, "astrabox egress proxy: send requests to a declared service's URL", http.StatusBadRequest)
		return
	}
	host := hostPort(r.URL.Host, "80")
	if !validHost(host) {
		http.Error(w, "astrabox egress proxy: the request names no valid destination host", http.StatusBadRequest)
		return
	}
	if s := p.hosts[host]; s != nil {
		p.serveService(w, r, s, "http", host, ref)
		return
	}
	if p.passThrough(host) {
		p.forward(w, r, host, ref)
		return
	}
	p.refuse(w, r, "http", host, ref)
}

// hostPort lower-cases a host and adds the default port when none is given.
func hostPort(h, def string) string {
	h = strings.ToLower(h)
	if _, _, err := net.SplitHostPort(h); err == nil {
		return h
	}
	return net.JoinHostPort(strings.Trim(h, "[]"), def)
}

// validHost reports whether a host:port from hostPort is one (a request line may carry "A://0]0"): a
// record names a real destination or none.
func validHost(hostport string) bool {
	h, _, err := net.SplitHostPort(hostport)
	return err == nil && h != ""
}

func (p *Proxy) passThrough(host string) bool {
	return p.o.Policy == PolicyAllow || isLoopback(host)
}

func isLoopback(hostport string) bool {
	h, _, err := net.SplitHostPort(hostport)
	if err != nil {
		h = hostport
	}
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

func (p *Proxy) next() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seq++
	return p.seq
}

func (p *Proxy) emit(rec Record) {
	if p.o.Observe != nil {
		p.o.Observe(rec)
	}
}

func (p *Proxy) refuse(w http.ResponseWriter, r *http.Request, scheme, host string, ref conntag.Ref) {
	p.emit(Record{Seq: p.next(), Replica: p.o.Replica, Scheme: scheme, Host: host, Method: r.Method, Path: r.URL.Path,
		Header: Redact(r.Header), Refused: true, Status: http.StatusForbidden, Conn: ref})
	http.Error(w, fmt.Sprintf("astrabox: %s is not a declared service; declare it under [tool.astrabox.services] or set egress = \"allow\"", host), http.StatusForbidden)
}

// connect answers CONNECT: a declared service's TLS is terminated here with the run's CA; an undeclared
// destination is refused (or tunnelled as it is, when allowed or on loopback).
func (p *Proxy) connect(w http.ResponseWriter, r *http.Request, ref conntag.Ref) {
	host := hostPort(r.Host, "443")
	if !validHost(host) {
		http.Error(w, "astrabox egress proxy: the request names no valid destination host", http.StatusBadRequest)
		return
	}
	s := p.hosts[host]
	if s == nil && !p.passThrough(host) {
		p.refuse(w, r, "https", host, ref)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		http.Error(w, "astrabox egress proxy: cannot tunnel", http.StatusInternalServerError)
		return
	}
	conn, buf, err := hj.Hijack()
	if err != nil {
		return
	}
	tun := conntag.From(r.Context()).Tunnel(ref)
	if !p.track(conn) {
		conn.Close()
		return
	}
	go func() {
		defer p.untrack(conn)
		defer conn.Close()
		if _, err := conn.Write([]byte("HTTP/1.1 200 Connection Established\r\n\r\n")); err != nil {
			return
		}
		client := &bufferedConn{Conn: conn, r: buf.Reader}
		if s == nil {
			p.tunnel(client, host, ref)
			return
		}
		p.terminate(client, tun, s, host)
	}()
}

// terminate speaks TLS to the client as the service's host, then serves the HTTP requests inside.
func (p *Proxy) terminate(conn net.Conn, tc *conntag.Conn, s *Service, host string) {
	name, _, _ := net.SplitHostPort(host)
	cfg := &tls.Config{
		MinVersion: tls.VersionTLS12,
		NextProtos: []string{"http/1.1"},
		GetCertificate: func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
			if hello.ServerName != "" {
				return p.o.CA.Leaf(strings.ToLower(hello.ServerName))
			}
			return p.o.CA.Leaf(name)
		},
	}
	tconn := tls.Server(conn, cfg)
	_ = tconn.SetDeadline(time.Now().Add(30 * time.Second))
	if err := tconn.Handshake(); err != nil {
		return
	}
	_ = tconn.SetDeadline(time.Time{})
	// Metered after decryption: the harness counts the plaintext the provider writes, before TLS.
	p.serveConn(tc.Meter(tconn), tc, func(w http.ResponseWriter, r *http.Request) {
		r.URL.Scheme, r.URL.Host = "https", host
		p.serveService(w, r, s, "https", host, conntag.From(r.Context()).Next())
	})
}

// tunnel copies bytes both ways to an allowed destination.
func (p *Proxy) tunnel(client net.Conn, host string, ref conntag.Ref) {
	up, err := net.DialTimeout("tcp", host, 10*time.Second)
	if err != nil {
		return
	}
	defer up.Close()
	p.emit(Record{Seq: p.next(), Replica: p.o.Replica, Scheme: "https", Host: host, Method: http.MethodConnect, Conn: ref})
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, client); done <- struct{}{} }()
	go func() { _, _ = io.Copy(client, up); done <- struct{}{} }()
	select {
	case <-done:
	case <-p.closed:
	}
}

// forward passes a plain HTTP request on to an allowed destination, recorded.
func (p *Proxy) forward(w http.ResponseWriter, r *http.Request, host string, ref conntag.Ref) {
	rec := &statusRecorder{ResponseWriter: w}
	rp := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) { pr.Out.URL = r.URL; pr.Out.Host = r.URL.Host }}
	rp.ServeHTTP(rec, r)
	p.emit(Record{Seq: p.next(), Replica: p.o.Replica, Scheme: "http", Host: host, Method: r.Method, Path: r.URL.Path,
		Query: r.URL.RawQuery, Header: Redact(r.Header), Status: rec.status(), Conn: ref})
}

// serveService records a declared service's request and has its handler answer it. The handler sees the
// provider's connection in conntag.Header (a value the client sent is replaced); the record does not.
func (p *Proxy) serveService(w http.ResponseWriter, r *http.Request, s *Service, scheme, host string, ref conntag.Ref) {
	body, err := io.ReadAll(io.LimitReader(r.Body, p.o.MaxBody+1))
	if err != nil || int64(len(body)) > p.o.MaxBody {
		http.Error(w, "astrabox egress proxy: request body unreadable or larger than the limit", http.StatusRequestEntityTooLarge)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.RequestURI = ""
	r.URL.Scheme, r.URL.Host = scheme, host // the handler sees the destination as host:port, default port filled in
	seq := p.next()
	rec := &statusRecorder{ResponseWriter: w}
	r.Header.Del(conntag.Header)
	header := Redact(r.Header)
	if !ref.Zero() {
		r.Header.Set(conntag.Header, ref.String())
	}
	s.Handler.ServeHTTP(rec, r)
	p.emit(Record{Seq: seq, Replica: p.o.Replica, Service: s.Name, Scheme: scheme, Host: host, Method: r.Method,
		Path: r.URL.Path, Query: r.URL.RawQuery, Header: header, Body: body, Status: rec.status(),
		Write: isWrite(r.Method, r.URL.Path, s.Reads), Conn: ref})
}

func isWrite(method, path string, reads []Route) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	for _, rt := range reads {
		if strings.EqualFold(rt.Method, method) && strings.HasPrefix(path, rt.PathPrefix) {
			return false
		}
	}
	return true
}

// credentialHeaders are replaced by a marker in records: a recorded request never carries a credential.
var credentialHeaders = []string{"Authorization", "Proxy-Authorization", "Cookie", "Set-Cookie", "X-Vault-Token", "X-Api-Key", "Api-Key", "X-Auth-Token"}

// Redact copies headers with credentials replaced by "[redacted]".
func Redact(h http.Header) http.Header {
	out := h.Clone()
	if out == nil {
		out = http.Header{}
	}
	for _, k := range credentialHeaders {
		if _, ok := out[k]; ok {
			out[k] = []string{"[redacted]"}
		}
	}
	return out
}

type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.code == 0 {
		s.code = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.code == 0 {
		s.code = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

// Hijack lets a handler behind the recorder drop the connection (a stub's fault); the status stays 0.
func (s *statusRecorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	hj, ok := s.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, errors.New("hijack not supported")
	}
	return hj.Hijack()
}

func (s *statusRecorder) status() int { return s.code }

// bufferedConn reads first what the server had already buffered from the client.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufferedConn) Read(b []byte) (int, error) { return c.r.Read(b) }

// oneConnListener hands one connection to an http.Server, then reports closed.
type oneConnListener struct {
	mu   sync.Mutex
	conn net.Conn
	done chan struct{}
	once sync.Once
}

func (l *oneConnListener) Accept() (net.Conn, error) {
	l.mu.Lock()
	c := l.conn
	l.conn = nil
	l.mu.Unlock()
	if c == nil {
		<-l.done
		return nil, net.ErrClosed
	}
	return &notifyConn{Conn: c, l: l}, nil
}

func (l *oneConnListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *oneConnListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)} }

type notifyConn struct {
	net.Conn
	l *oneConnListener
}

func (c *notifyConn) Close() error {
	err := c.Conn.Close()
	_ = c.l.Close()
	return err
}

// String describes a record for messages (credentials already redacted).
func (r Record) String() string {
	s := r.Method + " " + r.Scheme + "://" + r.Host + r.Path
	if r.Query != "" {
		s += "?" + r.Query
	}
	if r.Refused {
		return s + " (refused: not a declared service)"
	}
	return s + " -> " + strconv.Itoa(r.Status)
}
