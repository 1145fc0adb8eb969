package simulate

import (
	"fmt"
	"sort"
	"sync"

	"github.com/astrabox-dev/astrabox/internal/conntag"
	"github.com/astrabox-dev/astrabox/internal/double"
	"github.com/astrabox-dev/astrabox/internal/harness"
)

// A request sent without the X-Astrabox-Call header (a raw socket, an asyncio stream writing HTTP by hand)
// is first attributed to the call in flight on its replica when it lands. Work a call left running can
// land later, during another call. The harness therefore reports every loopback connection the provider
// opens (harness.Connection: local port, destination port, the call and line that opened it); the double
// and the egress proxy record which connection each request came over (conntag.Ref). Once the scenario's
// messages are all read, the platform matches the two: the n-th connection a listener accepted from port P
// is the n-th connection the replica's processes reported from P to that listener, in the order they opened
// them (process start order, then the harness's connection sequence). Nothing here depends on which side's
// record arrived first.
//
// A connection kept open across callbacks carries requests of several calls. The harness therefore also
// reports, per connection, which call's code wrote each run of its plaintext bytes (harness.Send), and a
// metered listener gives each request the offset of its first byte (conntag.Ref.Offset): the request is
// the call's whose run holds that byte. Without a known offset or run (a CONNECT tunnel's listener, a
// write that failed part-way), the first request of a connection is its opener's and a later one keeps
// the call in flight.

// attributeBySend switches per-send attribution on; tests turn it off to show what the opener-only
// attribution would blame.
var attributeBySend = true

// connRecord is one connection a replica process reported.
type connRecord struct {
	proc int // the order in which the platform first heard from the process
	pid  int
	c    harness.Connection
}

// connIndex collects a scenario's connection records, by replica.
type connIndex struct {
	mu    sync.Mutex
	procs map[string]int
	recs  map[string][]connRecord
	sends map[connKey][]harness.Send
}

// connKey names one connection of one harness process of a replica.
type connKey struct {
	replica string
	pid     int
	seq     int64
}

// add keeps the connection and send records of one message of replica's process pid. The platform reads a
// message of every process (its load reply) before it starts the replica's next process, so the order in
// which add first hears of a process, records or not, is the order the processes started.
func (x *connIndex) add(replica string, pid int, cs []harness.Connection, ss []harness.Send) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.procs == nil {
		x.procs, x.recs, x.sends = map[string]int{}, map[string][]connRecord{}, map[connKey][]harness.Send{}
	}
	for _, s := range ss {
		k := connKey{replica, pid, s.Seq}
		x.sends[k] = append(x.sends[k], s)
	}
	pk := fmt.Sprintf("%s|%d", replica, pid)
	order, ok := x.procs[pk]
	if !ok {
		order = len(x.procs)
		x.procs[pk] = order
	}
	for _, c := range cs {
		x.recs[replica] = append(x.recs[replica], connRecord{proc: order, pid: pid, c: c})
	}
}

// lookup finds the record of the connection ref names: the ref.Nth one replica opened from ref.Peer to
// ref.Listener.
func (x *connIndex) lookup(replica string, ref conntag.Ref) (connRecord, bool) {
	if ref.Zero() {
		return connRecord{}, false
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	var same []connRecord
	for _, r := range x.recs[replica] {
		if r.c.Port == ref.Peer && r.c.DestPort == ref.Listener {
			same = append(same, r)
		}
	}
	sort.SliceStable(same, func(i, j int) bool {
		if same[i].proc != same[j].proc {
			return same[i].proc < same[j].proc
		}
		return same[i].c.Seq < same[j].c.Seq
	})
	if ref.Nth > len(same) {
		return connRecord{}, false
	}
	return same[ref.Nth-1], true
}

// sentAt is the run of bytes that holds offset on the connection rec, as the harness reported the runs.
// False when no run holds it (its record never came: the process was killed mid-call) or when counting
// was lost at or before it.
func (x *connIndex) sentAt(replica string, rec connRecord, offset int64) (harness.Send, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	var found harness.Send
	ok := false
	for _, r := range x.sends[connKey{replica, rec.pid, rec.c.Seq}] {
		switch {
		case r.Lost && r.Offset <= offset:
			return harness.Send{}, false
		case !r.Lost && r.Offset <= offset && offset < r.End:
			found, ok = r, true
		}
	}
	return found, ok
}

// takeConns moves the connection and send records out of observations that pid of replica sent into the
// scenario's index: they hold ports and offsets, which differ on every run, and are facts for attribution,
// not for the history.
func (p *platform) takeConns(replica string, pid int, o *harness.Observations) {
	p.conns.add(replica, pid, o.Connections, o.Sends)
	o.Connections, o.Sends = nil, nil
}

// keyOf is the call key of a harness call id of process pid of replica ("" for none, or for the load).
func (p *platform) keyOf(replica string, pid int, call *int64) string {
	if call == nil {
		return ""
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.callTags[fmt.Sprintf("%s|%d:%d", replica, pid, *call)]
}

// madeBy is the call (its key) whose code wrote the first byte of a request without a call header, and the
// record of its connection and the unit of that call's work: the run of the connection's bytes holding the request's start offset when both
// are known, else the connection's opener for its first request (see openedBy). ok is false when the
// connection is unknown, or when neither applies (a later request of unknown offset).
func (p *platform) madeBy(replica string, ref conntag.Ref) (string, connRecord, *harness.Issuer, bool) {
	if ref.Framed && attributeBySend {
		if rec, ok := p.conns.lookup(replica, ref); ok {
			if run, ok := p.conns.sentAt(replica, rec, ref.Offset); ok {
				return p.keyOf(replica, rec.pid, run.Call), rec, run.Issuer, true
			}
		}
	}
	key, rec, ok := p.openedBy(replica, ref)
	return key, rec, rec.c.Issuer, ok
}

// openedBy is the call (its key) whose code opened the connection of a request without a call header, and
// that record, when the request was the first on that connection. A later request on a kept-alive
// connection may be another call's (a client reused across calls), so those keep the call in flight.
func (p *platform) openedBy(replica string, ref conntag.Ref) (string, connRecord, bool) {
	if ref.Request != 1 {
		return "", connRecord{}, false
	}
	rec, ok := p.conns.lookup(replica, ref)
	if !ok {
		return "", connRecord{}, false
	}
	return p.keyOf(replica, rec.pid, rec.c.Call), rec, true
}

// attribute sets the call of a history request from the harness's tags: the X-Astrabox-Call header when
// it carries one, else the call whose code wrote its first byte (or opened its connection). Either wins
// over the call that happened to be in flight when it arrived (work left behind by an earlier call); the
// latter is kept in InFlight. The unit of the call's work that issued it (Issuer) comes with the tag: the
// X-Astrabox-Work header, or the run of bytes (or connection record) that decided the call.
func (p *platform) attribute(hr *Request, rq double.Request, methods map[string]string) {
	key := ""
	if tag := rq.Header.Get(CallHeader); tag != "" {
		key = p.callTags[rq.Replica+"|"+tag]
		if is, ok := harness.ParseIssuer(rq.Header.Get(harness.WorkHeader)); ok && key != "" {
			hr.Issuer = &is
		}
	} else {
		var is *harness.Issuer
		key, _, is, _ = p.madeBy(rq.Replica, rq.Conn)
		if is != nil && key != "" {
			c := *is
			hr.Issuer = &c
		}
	}
	if key == "" {
		return
	}
	if key != hr.Call {
		hr.InFlight = hr.Call
		hr.Background = true
	}
	hr.Call = key
	hr.Callback = methods[key]
}

// placeEgress attributes each egress attempt to the call whose code made it (wrote its first byte, or
// opened its connection), and places it at the line in the provider's own files that opened it.
func (p *platform) placeEgress(attempts []EgressAttempt, methods map[string]string) {
	for i := range attempts {
		a := &attempts[i]
		key, rec, _, ok := p.madeBy(a.Replica, a.conn)
		if !ok {
			continue
		}
		if key != "" && key != a.Call {
			a.Call, a.Callback = key, methods[key]
		}
		a.File, a.Line, a.Function = rec.c.File, rec.c.Line, rec.c.Function
	}
}
