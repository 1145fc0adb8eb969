package conformance

import (
	"github.com/astrabox-dev/astrabox/internal/harness"
	"strings"
	"testing"

	"github.com/astrabox-dev/astrabox/internal/report"
	"github.com/astrabox-dev/astrabox/internal/simulate"
)

// harborAudit is where a Harbor variant writes its audit records: on the connection to the double (PUT
// /v1/records/harbor-audit/...) or, over TLS, in the declared object store (POST /v2/objects/harbor-audit/...).
type harborAudit struct {
	dir, method, prefix string
}

// harborVariants are Harbor's kept-alive fixtures, the correct one and its broken twin, plain and over TLS.
var harborVariants = []struct {
	name            string
	correct, broken harborAudit
}{
	{"plain", harborAudit{"../../testdata/providers/correct/raw_keepalive", "PUT", "/v1/records/harbor-audit/"},
		harborAudit{"../../testdata/providers/broken/gen-no-dispatch-kept-alive", "PUT", "/v1/records/harbor-audit/"}},
	{"tls", harborAudit{"../../testdata/providers/correct/raw_keepalive_tls", "POST", "/v2/objects/harbor-audit/"},
		harborAudit{"../../testdata/providers/broken/gen-no-dispatch-kept-alive-tls", "POST", "/v2/objects/harbor-audit/"}},
}

// isAudit reports whether rq is one of the variant's audit writes.
func (a harborAudit) isAudit(rq simulate.Request) bool {
	return rq.Method == a.method && strings.HasPrefix(rq.Path, a.prefix)
}

// of reports whether rq is the audit write of the attempt of prepare_turn c.
func (a harborAudit) of(rq simulate.Request, c *simulate.CallRecord) bool {
	return c != nil && c.Is(simulate.CallPrepareTurn) && c.Replica == rq.Replica &&
		rq.Path == a.prefix+c.Ctx.Session+"/"+c.Ctx.Attempt
}

// harborRequests calls fn with every request a Harbor variant wrote on its kept-alive connections: the
// consent reads and the audit writes, with the call each is attributed to.
func (a harborAudit) requests(hists []*simulate.History, fn func(h *simulate.History, rq simulate.Request, c *simulate.CallRecord)) {
	for _, h := range hists {
		byKey := map[string]*simulate.CallRecord{}
		for _, c := range h.Calls() {
			byKey[c.Key] = c
		}
		for _, rq := range h.Requests {
			audit := a.isAudit(rq)
			consent := rq.Method == "GET" && strings.HasPrefix(rq.Path, "/v1/consents/")
			if audit || consent {
				fn(h, rq, byKey[rq.Call])
			}
		}
	}
}

// TestKeptAliveRawConnectionPerSend: correct/raw_keepalive writes every request by hand on one raw
// connection per process, opened while the provider loaded (raw_keepalive_tls its audit writes on a second
// one, wrapped in TLS, to a declared service); each request is attributed to the prepare_turn whose code
// wrote it, in its flight (neither to the load that opened the connection nor as background work), and the
// fixture passes with nothing left unexercised. Both tests here read the fixtures' recorded runs in every
// lane (recordedThenLive); `make test` plays the broken TLS variant live as the sample, the long lane all four.
func TestKeptAliveRawConnectionPerSend(t *testing.T) {
	for _, v := range harborVariants {
		t.Run(v.name, func(t *testing.T) {
			recordedThenLive(t, strings.TrimPrefix(v.correct.dir, "../../testdata/providers/"), false, func(t *testing.T, j judged) {
				keptAliveInTurn(t, v.correct, j)
			})
		})
	}
}

func keptAliveInTurn(t *testing.T, a harborAudit, j judged) {
	results, hists := j.results, j.hists
	audits, reads := 0, 0
	perReplicaTurns := map[string]int{}
	a.requests(hists, func(h *simulate.History, rq simulate.Request, c *simulate.CallRecord) {
		if rq.Background || rq.InFlight != "" || c == nil || !c.Is(simulate.CallPrepareTurn) {
			t.Errorf("%s: %s %s attributed to %q (in flight %q, background %v), want the prepare_turn that wrote it",
				h.Scenario, rq.Method, rq.Path, rq.Call, rq.InFlight, rq.Background)
			return
		}
		if rq.Issuer == nil || rq.Issuer.AfterEnd {
			t.Errorf("%s: %s %s issued by %+v, want a unit of the turn's work before it ended", h.Scenario, rq.Method, rq.Path, rq.Issuer)
		}
		if a.isAudit(rq) {
			audits++
			if !a.of(rq, c) {
				t.Errorf("%s: %s attributed to %s, which is not the turn of its attempt", h.Scenario, rq.Path, c.Key)
			}
			perReplicaTurns[h.Scenario+"|"+rq.Replica]++
		} else {
			reads++
		}
	})
	if audits == 0 || reads == 0 {
		t.Fatalf("%d audit writes and %d consent reads recorded; want both", audits, reads)
	}
	reused := false
	for _, n := range perReplicaTurns {
		reused = reused || n > 1
	}
	if !reused {
		t.Error("no replica wrote two audit records: the kept-alive connection was never reused across turns")
	}
	for _, r := range results {
		if r.Status == report.StatusFailed || r.Status == report.StatusNotExercised {
			t.Errorf("%s %s: %s", r.Check, r.Status, r.Message)
		}
	}
}

// TestKeptAliveBackgroundWriteBlamesItsWriter: broken/gen-no-dispatch-kept-alive's batched audit PUT (its
// -tls twin's POST to the declared object store, inside TLS) goes out on a connection Harbor opened while
// it loaded, written by the flusher thread of the replica's first
// prepare_turn while the next prepare_turn is in flight (and between that turn's own requests on the same
// connection). It is recorded, attributed to the prepare_turn whose thread wrote it, with the call in flight
// kept apart; that turn's own requests stay its own; GEN-NO-DISPATCH fails and nothing else does.
func TestKeptAliveBackgroundWriteBlamesItsWriter(t *testing.T) {
	for _, v := range harborVariants {
		t.Run(v.name, func(t *testing.T) {
			recordedThenLive(t, strings.TrimPrefix(v.broken.dir, "../../testdata/providers/"), v.name == "tls", func(t *testing.T, j judged) {
				keptAliveLate(t, v.broken, j)
			})
		})
	}
}

func keptAliveLate(t *testing.T, a harborAudit, j judged) {
	results, hists := j.results, j.hists
	late, own := 0, 0
	a.requests(hists, func(h *simulate.History, rq simulate.Request, c *simulate.CallRecord) {
		if !a.isAudit(rq) {
			own++
			if rq.Background || rq.InFlight != "" {
				t.Errorf("%s: consent read %s attributed to %q (in flight %q): a turn's own read is its own", h.Scenario, rq.Path, rq.Call, rq.InFlight)
			}
			return
		}
		late++
		if !a.of(rq, c) {
			t.Errorf("%s: %s %s attributed to %q (%+v), not to the prepare_turn of its attempt", h.Scenario, rq.Method, rq.Path, rq.Call, c)
		}
		if !rq.Background || rq.InFlight == "" || rq.InFlight == rq.Call {
			t.Errorf("%s: %s (call %s) should have landed while another call was in flight: in_flight %q, background %v",
				h.Scenario, rq.Path, rq.Call, rq.InFlight, rq.Background)
		}
		// The unit that wrote it comes from the run of bytes, not from the connection's opener (Harbor's
		// constructor, outside any call): the flusher thread the turn started, after the turn had ended.
		if is := rq.Issuer; is == nil || is.Kind != harness.WorkThread || !is.Started() || !is.AfterEnd {
			t.Errorf("%s: %s issued by %+v, want the flusher thread of %s after it ended", h.Scenario, rq.Path, is, rq.Call)
		}
	})
	if late == 0 || own == 0 {
		t.Fatalf("%d batched audit writes and %d consent reads recorded; want both", late, own)
	}
	res := resultOf(t, results, "GEN-NO-DISPATCH")
	if res.Status != report.StatusFailed || !strings.Contains(res.Message, "prepare_turn returned, but 1 of its write(s) landed afterwards") {
		t.Errorf("GEN-NO-DISPATCH: %s %s", res.Status, res.Message)
	}
	for _, r := range results {
		if r.Status == report.StatusFailed && r.Check != "GEN-NO-DISPATCH" {
			t.Errorf("%s failed too: %s", r.Check, r.Message)
		}
	}
}
