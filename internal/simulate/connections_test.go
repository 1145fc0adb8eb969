package simulate

import (
	"net/http"
	"testing"

	"github.com/astrabox-dev/astrabox/internal/conntag"
	"github.com/astrabox-dev/astrabox/internal/double"
	"github.com/astrabox-dev/astrabox/internal/harness"
)

func callID(n int64) *int64 { return &n }

// connPlatform is a platform that knows two processes of replica r1 (pids 100, then 200) and their calls.
func connPlatform() *platform {
	p := &platform{callTags: map[string]string{
		"r1|100:3": "r1#1", "r1|100:4": "r1#2", "r1|200:2": "r1#3",
	}}
	return p
}

// TestConnectionMatchingIsOrderFree: the n-th connection a listener accepted from a port is the n-th the
// replica's processes reported from that port to that listener, in process and connection order, whichever
// message arrived first; another listener's or another replica's connections never match.
func TestConnectionMatchingIsOrderFree(t *testing.T) {
	p := connPlatform()
	// The later process's records and a later record of the first process arrive first.
	p.takeConns("r1", 100, &harness.Observations{})
	p.takeConns("r1", 200, &harness.Observations{Connections: []harness.Connection{{Seq: 1, Port: 5000, DestPort: 9000, Call: callID(2)}}})
	p.takeConns("r1", 100, &harness.Observations{Connections: []harness.Connection{{Seq: 7, Port: 5000, DestPort: 9000, Call: callID(4), File: "/p/late.py", Line: 12}}})
	o := &harness.Observations{Connections: []harness.Connection{
		{Seq: 2, Port: 5000, DestPort: 9000, Call: callID(3)},
		{Seq: 3, Port: 5000, DestPort: 9100, Call: callID(4)},
		{Seq: 4, Port: 6000, DestPort: 9000},
	}}
	p.takeConns("r1", 100, o)
	if o.Connections != nil {
		t.Fatal("the connection records stayed in the observations (they would reach the history)")
	}
	for _, tc := range []struct {
		ref  conntag.Ref
		want string
	}{
		{conntag.Ref{Listener: 9000, Peer: 5000, Nth: 1, Request: 1}, "r1#1"},
		{conntag.Ref{Listener: 9000, Peer: 5000, Nth: 2, Request: 1}, "r1#2"},
		{conntag.Ref{Listener: 9000, Peer: 5000, Nth: 3, Request: 1}, "r1#3"},
		{conntag.Ref{Listener: 9100, Peer: 5000, Nth: 1, Request: 1}, "r1#2"},
		{conntag.Ref{Listener: 9000, Peer: 5000, Nth: 4, Request: 1}, ""}, // never reported
		{conntag.Ref{Listener: 9000, Peer: 6000, Nth: 1, Request: 1}, ""}, // opened outside any call
		{conntag.Ref{Listener: 9000, Peer: 5000, Nth: 1, Request: 2}, ""}, // a later request on the connection
		{conntag.Ref{}, ""},
	} {
		if got, _, _ := p.openedBy("r1", tc.ref); got != tc.want {
			t.Errorf("openedBy(%+v) = %q, want %q", tc.ref, got, tc.want)
		}
	}
	if got, _, ok := p.openedBy("r2", conntag.Ref{Listener: 9000, Peer: 5000, Nth: 1, Request: 1}); ok || got != "" {
		t.Errorf("another replica's connection matched: %q", got)
	}
}

// TestAttributeByConnection: a request without the call header is the call's that opened its connection
// (the call in flight kept in InFlight); the header wins over the connection; a later request on a kept
// connection keeps the call in flight (another call may reuse a client).
func TestAttributeByConnection(t *testing.T) {
	p := connPlatform()
	p.takeConns("r1", 100, &harness.Observations{Connections: []harness.Connection{{Seq: 1, Port: 5000, DestPort: 9000, Call: callID(3)}}})
	methods := map[string]string{"r1#1": string(CallPrepareTurn), "r1#2": string(CallPrepareSession), "r1#3": string(CallPrepareTurn)}
	first := conntag.Ref{Listener: 9000, Peer: 5000, Nth: 1, Request: 1}
	for _, tc := range []struct {
		name     string
		header   string
		ref      conntag.Ref
		inFlight string
		call     string
		was      string
		bg       bool
	}{
		{"late write over a raw connection", "", first, "r1#2", "r1#1", "r1#2", true},
		{"while nothing ran", "", first, "", "r1#1", "", true},
		{"in its own flight", "", first, "r1#1", "r1#1", "", false},
		{"header wins", "100:4", first, "r1#3", "r1#2", "r1#3", true},
		{"kept connection", "", conntag.Ref{Listener: 9000, Peer: 5000, Nth: 1, Request: 2}, "r1#3", "r1#3", "", false},
	} {
		hr := Request{Replica: "r1", Call: tc.inFlight, Callback: methods[tc.inFlight]}
		rq := double.Request{Replica: "r1", Header: http.Header{}, Conn: tc.ref}
		if tc.header != "" {
			rq.Header.Set(CallHeader, tc.header)
		}
		p.attribute(&hr, rq, methods)
		if hr.Call != tc.call || hr.InFlight != tc.was || hr.Background != tc.bg || hr.Callback != methods[tc.call] {
			t.Errorf("%s: call %q in_flight %q background %v callback %q; want %q %q %v", tc.name, hr.Call, hr.InFlight, hr.Background, hr.Callback, tc.call, tc.was, tc.bg)
		}
	}
	attempts := []EgressAttempt{{Replica: "r1", Call: "r1#2", Callback: string(CallPrepareSession), conn: first}, {Replica: "r1", Call: "r1#2"}}
	p.conns.recs["r1"][0].c.File, p.conns.recs["r1"][0].c.Line, p.conns.recs["r1"][0].c.Function = "/p/ping.py", 24, "_ping"
	p.placeEgress(attempts, methods)
	if a := attempts[0]; a.Call != "r1#1" || a.Callback != string(CallPrepareTurn) || a.File != "/p/ping.py" || a.Line != 24 || a.Function != "_ping" {
		t.Errorf("egress attempt placed as %+v", a)
	}
	if a := attempts[1]; a.Call != "r1#2" || a.File != "" {
		t.Errorf("an attempt without a connection changed: %+v", a)
	}
}
