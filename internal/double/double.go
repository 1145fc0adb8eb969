// Package double is the deployment double: a loopback HTTP service that stands in for a deployment's
// credential service, identity and consent service and record store during a simulation.
//
// It implements the API of spec/deployment-double.md. One Double holds one shared state; each replica gets
// its own listener (see [Double.URL]) so that every request is attributed to the replica that made it and to
// the callback that replica had in flight (see [Double.SetInFlight]). Every request is recorded in arrival
// order (see [Double.Requests]), and faults (delay, hold, unavailable, drop after apply) can be injected per
// scenario step (see [Double.AddFault]).
//
// A held request stays held even if its client gives up; once released it is applied like any late write.
// Fences are checked when a write is applied, not when it arrives.
package double

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	mrand "math/rand"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/astrabox-dev/astrabox/internal/conntag"
)

// EnvURL is the environment variable that tells a replica process its base URL of the double.
const EnvURL = "ASTRABOX_DOUBLE_URL"

// Options configures a Double. The zero value is ready to use.
type Options struct {
	// Clock gives the arrival time recorded for each request. Default: time.Now. It is called without any
	// lock of the double held, so it may take the caller's own locks.
	Clock func() time.Time
	// CredentialTTL is the lifetime announced in `expires_in` for issued credentials. Default: one hour.
	// It is rounded down to whole seconds; anything under one second becomes one second.
	CredentialTTL time.Duration
	// MaxBody is the largest request body accepted, in bytes; larger bodies answer 413. Default: 1 MiB.
	MaxBody int64
	// Seed, when non-zero, makes issued credential tokens a deterministic sequence for that seed, so that a
	// replayed scenario gives the same history. Zero draws tokens from crypto/rand.
	Seed int64
	// Upstreams are the stand-ins of the provider's declared services, by service name: requests the egress
	// proxy forwards with ServiceHeader are recorded and faulted like the double's own, and answered by them.
	Upstreams map[string]Upstream
	// CloseWait bounds how long Close waits for handlers once it has cancelled them. Default: CloseBound.
	CloseWait time.Duration
}

// CloseBound is how long Close waits, by default, for the handlers still running (a stand-in answering a
// request) after it has cancelled them. A handler still running then is reported by Close and left behind.
const CloseBound = 2 * time.Second

// Double is a running deployment double. All methods are safe for concurrent use.
type Double struct {
	clock   func() time.Time
	ttl     int64
	maxBody int64

	// arrivalMu serialises the clock reading and the sequence number of arrivals so that Seq order and
	// Arrival order agree. It is never held while mu is wanted by a caller of the clock.
	arrivalMu sync.Mutex

	mu        sync.Mutex
	closed    bool
	done      chan struct{}
	servers   map[string]*replicaServer
	wg        sync.WaitGroup // handlers in progress and Serve loops
	closeOnce sync.Once
	closeErr  error
	// stop is cancelled by Close: a stand-in still answering a request then gives up on it (its client's
	// cancellation is not seen, see applyUpstream, but the double's end is).
	stop       context.Context
	cancelStop context.CancelFunc
	closeWait  time.Duration

	// recording
	seq        int64
	applySeq   int64
	requests   []*Request
	inFlight   map[string]Call
	hasFlight  map[string]bool
	changed    chan struct{} // closed and replaced on every arrival and every change of the held set
	holds      map[*holdWait]struct{}
	faults     []*faultState
	nextFault  FaultID
	state      state
	activeReqs int // handlers currently running; read by tests
	tokenRand  *mrand.Rand
	upstreams  map[string]Upstream
}

type replicaServer struct {
	url string
	srv *http.Server
}

// Start creates a Double. Listeners are opened lazily, one per replica, by [Double.URL].
func Start(o Options) (*Double, error) {
	if o.CredentialTTL < 0 {
		return nil, fmt.Errorf("start deployment double: credential TTL %v is negative", o.CredentialTTL)
	}
	if o.MaxBody < 0 {
		return nil, fmt.Errorf("start deployment double: max body %d is negative", o.MaxBody)
	}
	d := &Double{
		clock:     o.Clock,
		ttl:       int64(o.CredentialTTL / time.Second),
		maxBody:   o.MaxBody,
		done:      make(chan struct{}),
		servers:   map[string]*replicaServer{},
		inFlight:  map[string]Call{},
		hasFlight: map[string]bool{},
		changed:   make(chan struct{}),
		holds:     map[*holdWait]struct{}{},
		state:     newState(),
		upstreams: o.Upstreams,
	}
	d.stop, d.cancelStop = context.WithCancel(context.Background())
	d.closeWait = o.CloseWait
	if d.closeWait <= 0 {
		d.closeWait = CloseBound
	}
	if o.Seed != 0 {
		d.tokenRand = mrand.New(mrand.NewSource(o.Seed))
	}
	if d.clock == nil {
		d.clock = time.Now
	}
	if o.CredentialTTL == 0 {
		d.ttl = 3600
	} else if d.ttl < 1 {
		d.ttl = 1
	}
	if d.maxBody == 0 {
		d.maxBody = 1 << 20
	}
	return d, nil
}

// URL returns the base URL (for example http://127.0.0.1:40123) that replica must use. The replica's
// listener is opened on a free loopback port the first time it is asked for; later calls return the same URL.
func (d *Double) URL(replica string) (string, error) {
	if replica == "" {
		return "", errors.New("deployment double: replica name is empty")
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return "", errors.New("deployment double: already closed")
	}
	if rs, ok := d.servers[replica]; ok {
		return rs.url, nil
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("deployment double: listen on loopback for replica %q: %w", replica, err)
	}
	conns := &conntag.Counter{}
	srv := &http.Server{
		Handler:           http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { d.serve(replica, w, r) }),
		ConnContext:       conns.ConnContext,
		ReadHeaderTimeout: 30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          log.New(io.Discard, "", 0),
		BaseContext:       func(net.Listener) context.Context { return context.Background() },
	}
	rs := &replicaServer{url: "http://" + ln.Addr().String(), srv: srv}
	d.servers[replica] = rs
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		_ = srv.Serve(conntag.Listen(ln, conns)) // returns http.ErrServerClosed after Close
	}()
	return rs.url, nil
}

// Close stops every listener, releases held requests (they answer 503 without being applied), cancels the
// requests a declared service's stand-in is still answering, and waits for every handler to return, at most
// the close bound (Options.CloseWait). A handler still running after that is left behind and reported in the
// returned *StuckError, with the requests that were not done. It is safe to call more than once (every call
// returns the first one's error); recorded state stays readable afterwards.
func (d *Double) Close() error {
	d.closeOnce.Do(func() {
		d.mu.Lock()
		d.closed = true
		close(d.done)
		servers := make([]*http.Server, 0, len(d.servers))
		for _, rs := range d.servers {
			servers = append(servers, rs.srv)
		}
		d.mu.Unlock()
		d.cancelStop()
		for _, s := range servers {
			_ = s.Close()
		}
		waited := make(chan struct{})
		go func() { d.wg.Wait(); close(waited) }()
		t := time.NewTimer(d.closeWait)
		defer t.Stop()
		select {
		case <-waited:
		case <-t.C:
			d.closeErr = &StuckError{Bound: d.closeWait, Pending: d.pendingRequests()}
		}
	})
	return d.closeErr
}

// StuckError is a Close that gave up waiting for some handlers: Pending are the requests not done then.
type StuckError struct {
	Bound   time.Duration
	Pending []Request
}

func (e *StuckError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "deployment double: %d request(s) still not answered %s after the end of the scenario; left behind:", len(e.Pending), e.Bound)
	for _, r := range e.Pending {
		b.WriteString(" ")
		b.WriteString(r.Describe())
		b.WriteString(";")
	}
	return strings.TrimSuffix(b.String(), ";")
}

// pendingRequests copies the requests whose handler has not finished.
func (d *Double) pendingRequests() []Request {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []Request
	for _, r := range d.requests {
		if !r.Done {
			out = append(out, r.clone())
		}
	}
	return out
}

// enter registers a handler; it reports false once the double is closed.
func (d *Double) enter() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return false
	}
	d.wg.Add(1)
	d.activeReqs++
	return true
}

func (d *Double) leave() {
	d.mu.Lock()
	d.activeReqs--
	d.mu.Unlock()
	d.wg.Done()
}
