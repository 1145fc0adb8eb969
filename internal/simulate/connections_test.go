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

// TestAttributeBySend: on a kept-alive connection (opened while the provider loaded, by no callback) each
// request is the call's whose run of bytes holds its first byte, whichever call opened the connection or
// is in flight; a request in no reported run, from a lost offset on, or of unknown offset, falls back as
// before; with
// per-send attribution off, the same requests are blamed on the opener or the call in flight.
func TestAttributeBySend(t *testing.T) {
	p := connPlatform()
	p.callTags["r1|100:1"] = "" // the load call has no key
	// The load reply names the connection (opened by the load, call 1); runs arrive out of order, from
	// replies and background messages.
	p.takeConns("r1", 100, &harness.Observations{Connections: []harness.Connection{{Seq: 1, Port: 5000, DestPort: 9000, Call: callID(1)}}})
	late := &harness.Observations{Sends: []harness.Send{{Seq: 1, Offset: 300, End: 400, Call: callID(3), AfterReturn: true}}}
	p.takeConns("r1", 100, late)
	if late.Sends != nil {
		t.Fatal("the send records stayed in the observations (they would reach the history)")
	}
	p.takeConns("r1", 100, &harness.Observations{Sends: []harness.Send{
		{Seq: 1, Offset: 0, End: 120, Call: callID(3)}, {Seq: 1, Offset: 120, End: 300, Call: callID(4)},
		{Seq: 1, Offset: 400, End: 600, Call: callID(4)}, {Seq: 1, Offset: 900, End: 900, Lost: true},
		{Seq: 2, Offset: 0, End: 50, Call: callID(4)},
	}})
	methods := map[string]string{"r1#1": string(CallPrepareTurn), "r1#2": string(CallPrepareTurn), "r1#3": string(CallPrepareTurn)}
	ref := func(req int, off int64, framed bool) conntag.Ref {
		return conntag.Ref{Listener: 9000, Peer: 5000, Nth: 1, Request: req, Offset: off, Framed: framed}
	}
	cases := []struct {
		name           string
		ref            conntag.Ref
		inFlight       string
		call, was      string
		bg             bool
		openerCall     string // with per-send attribution off
		openerInFlight string
	}{
		{"first request, first run", ref(1, 0, true), "r1#1", "r1#1", "", false, "r1#1", ""},
		{"a later turn's request on the connection", ref(2, 120, true), "r1#2", "r1#2", "", false, "r1#2", ""},
		{"a background write of the first turn while the second runs", ref(3, 300, true), "r1#2", "r1#1", "r1#2", true, "r1#2", ""},
		{"inside a run, not at its start", ref(4, 450, true), "r1#2", "r1#2", "", false, "r1#2", ""},
		{"past a lost offset", ref(5, 950, true), "r1#2", "r1#2", "", false, "r1#2", ""},
		{"in no run (its record never came)", ref(5, 700, true), "r1#2", "r1#2", "", false, "r1#2", ""},
		{"offset unknown", ref(3, 0, false), "r1#2", "r1#2", "", false, "r1#2", ""},
	}
	for _, off := range []bool{false, true} {
		attributeBySend = !off
		for _, tc := range cases {
			hr := Request{Replica: "r1", Call: tc.inFlight, Callback: methods[tc.inFlight]}
			p.attribute(&hr, double.Request{Replica: "r1", Header: http.Header{}, Conn: tc.ref}, methods)
			call, was, bg := tc.call, tc.was, tc.bg
			if off {
				call, was, bg = tc.openerCall, tc.openerInFlight, false
			}
			if hr.Call != call || hr.InFlight != was || hr.Background != bg {
				t.Errorf("per-send %v, %s: call %q in_flight %q background %v; want %q %q %v", !off, tc.name, hr.Call, hr.InFlight, hr.Background, call, was, bg)
			}
		}
	}
	attributeBySend = true
}
