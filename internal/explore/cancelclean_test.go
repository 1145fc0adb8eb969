package explore

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/astrabox-dev/astrabox/internal/conformance"
	"github.com/astrabox-dev/astrabox/internal/double"
	"github.com/astrabox-dev/astrabox/internal/simulate"
)

// TestAbandonedWriteLandingBeforeTheReply reproduces what a loaded machine does to the cancelled turn's
// reply, deterministically: simulate.BeforeApplyMark holds the platform's count of applied writes until the
// fixture's write has reached the double and every request the double has received is answered, so the write
// the cancelled callback's abandoned worker made lands before the platform takes the reply. The landing-order
// rule (a write applied after ApplyMark) then misses it; GEN-CANCEL-CLEAN still fails both broken fixtures,
// because the unit that issued the write is one the callback never waited for, and still passes the reference
// and the outbox twin, whose cancelled callbacks wait for their workers.
//
// The turn is cancelled when its first request reaches the double (abandonedCancelYAML), never at a fixed
// deadline: with the late-cancel scenario's 0.05 s deadline, a loaded machine let the cancel reach the harness
// before the provider had issued its write (or started the worker that issues it), and the broken outbox
// fixture then had no write to judge (GEN-CANCEL-CLEAN passed it: docs/performance.md, "Two tests that
// failed under load").
func TestAbandonedWriteLandingBeforeTheReply(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python (skipped under -short)")
	}
	sc, err := simulate.ParseScenario("abandoned-cancel.yaml", []byte(abandonedCancelYAML))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { simulate.BeforeApplyMark = nil }()
	for _, tc := range []struct {
		dir   string
		fails bool
		path  string
	}{
		{filepath.Join("testdata", "providers", "broken", "gen-cancel-clean"), true, "/v1/records/turn-starts/s1/t1"},
		{filepath.Join("testdata", "providers", "broken", "gen-cancel-clean-outbox"), true, "/v1/records/tailwind-outbox/s1/t1"},
		{filepath.Join("testdata", "providers", "correct", "outbox-entry-waits"), false, "/v1/records/tailwind-outbox/s1/t1"},
		{filepath.Join("examples", "providers", "reference"), false, ""},
	} {
		t.Run(filepath.Base(tc.dir), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			simulate.BeforeApplyMark = func(requests func() []double.Request) { awaitLanded(ctx, requests, tc.path) }
			env, w := setup(t, filepath.Join("..", "..", tc.dir), 1)
			h, err := w.Run(ctx, clone(sc))
			if err != nil {
				t.Fatal(err)
			}
			if ctx.Err() != nil {
				t.Fatalf("the run outlived its deadline: the hook stopped waiting for %s to land", tc.path)
			}
			turn := h.CallsOf("prepare_turn")[0]
			if turn.Outcome != simulate.OutcomeCancelled {
				t.Fatalf("the first turn ended %s, want cancelled", turn.Outcome)
			}
			for _, r := range h.Requests {
				if r.Call != turn.Key || !r.Applied {
					continue
				}
				if r.ApplyOrder > turn.ApplyMark {
					t.Errorf("%s %s landed after the mark (%d > %d): the hook did not let it land before the reply", r.Method, r.Path, r.ApplyOrder, turn.ApplyMark)
				}
			}
			ids, msgs := conformance.Failing(env.Evidence([]*simulate.History{h}), nil, nil, nil)
			if got := slices.Contains(ids, "GEN-CANCEL-CLEAN"); got != tc.fails {
				t.Fatalf("GEN-CANCEL-CLEAN failing = %v, want %v (fails %v)", got, tc.fails, ids)
			}
			if !tc.fails {
				if len(ids) > 0 {
					t.Errorf("the provider fails %v", ids)
				}
				return
			}
			if m := msgs["GEN-CANCEL-CLEAN"]; !strings.Contains(m, tc.path) || !strings.Contains(m, "never waited for") {
				t.Errorf("GEN-CANCEL-CLEAN says %q: it should name the abandoned write %s and the unit that issued it", m, tc.path)
			}
		})
	}
}

// abandonedCancelYAML is the late-cancel scenario with the cancel on the turn's first request (on: request)
// rather than at a 0.05 s deadline: the cancel then always meets the provider's code running, with a request
// in flight (slowed by the double), however slowly the machine runs. The fallback deadline, for a turn that
// sends no request, is generous, as the generator's is (simulate's ops_turn.go).
const abandonedCancelYAML = `name: abandoned-cancel
replicas: 1
steps:
  - {op: cold_start, session: s1, agent: agent-1, principal: alice}
  - op: turn
    session: s1
    attempt: t1
    fault: {kind: cancel, after: 2, on: request}
    double: [{kind: delay, delay: 0.2}]
  - {op: turn, session: s1, attempt: t2}
`

// awaitLanded waits, until ctx ends, for every request the double has received to be answered and, once a
// turn has sent one, for a request to path to be among them (path "": none): the event that puts the write
// an abandoned worker sends before the apply mark, however late its thread runs. The hook runs before every
// callback's mark; the calls before the first turn have no such write to wait for.
func awaitLanded(ctx context.Context, requests func() []double.Request, path string) {
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !landed(requests(), path) {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// landed reports whether every request in reqs is answered and, when a turn sent one of them, whether one
// went to path (any, when path is "").
func landed(reqs []double.Request, path string) bool {
	turn, seen := false, path == ""
	for _, r := range reqs {
		if !r.Done {
			return false
		}
		turn = turn || r.Call != nil && r.Call.Callback == string(simulate.CallPrepareTurn)
		seen = seen || r.Path == path
	}
	return seen || !turn
}
