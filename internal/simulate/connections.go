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
}

// add keeps the connection records of one message of replica's process pid. The platform reads a message
// of every process (its first call's reply) before it starts the replica's next process, so the order in
// which add first hears of a process, records or not, is the order the processes started.
func (x *connIndex) add(replica string, pid int, cs []harness.Connection) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.procs == nil {
		x.procs, x.recs = map[string]int{}, map[string][]connRecord{}
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

// takeConns moves the connection records out of observations that pid of replica sent into the scenario's
// index: they hold ports, which differ on every run, and are facts for attribution, not for the history.
func (p *platform) takeConns(replica string, pid int, o *harness.Observations) {
	p.conns.add(replica, pid, o.Connections)
	o.Connections = nil
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
	if rec.c.Call == nil {
		return "", rec, true
	}
	p.mu.Lock()
	key := p.callTags[fmt.Sprintf("%s|%d:%d", replica, rec.pid, *rec.c.Call)]
	p.mu.Unlock()
	return key, rec, true
}

// attribute sets the call of a history request from the harness's tags: the X-Astrabox-Call header when
// it carries one, else the call that opened its connection. Either wins over the call that happened to be
// in flight when it arrived (work left behind by an earlier call); the latter is kept in InFlight. The unit
// of the call's work that issued it (Issuer) comes with the tag: the X-Astrabox-Work header, or the
// connection record.
func (p *platform) attribute(hr *Request, rq double.Request, methods map[string]string) {
	key := ""
	if tag := rq.Header.Get(CallHeader); tag != "" {
		key = p.callTags[rq.Replica+"|"+tag]
		if is, ok := harness.ParseIssuer(rq.Header.Get(harness.WorkHeader)); ok && key != "" {
			hr.Issuer = &is
		}
	} else {
		var rec connRecord
		key, rec, _ = p.openedBy(rq.Replica, rq.Conn)
		if rec.c.Issuer != nil && key != "" {
			is := *rec.c.Issuer
			hr.Issuer = &is
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

// placeEgress attributes each egress attempt to the call whose code opened its connection, and places it
// at the line in the provider's own files that opened it.
func (p *platform) placeEgress(attempts []EgressAttempt, methods map[string]string) {
	for i := range attempts {
		a := &attempts[i]
		key, rec, ok := p.openedBy(a.Replica, a.conn)
		if !ok {
			continue
		}
		if key != "" && key != a.Call {
			a.Call, a.Callback = key, methods[key]
		}
		a.File, a.Line, a.Function = rec.c.File, rec.c.Line, rec.c.Function
	}
}
