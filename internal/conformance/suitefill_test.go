package conformance

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/astrabox-dev/astrabox/internal/harness"
	"github.com/astrabox-dev/astrabox/internal/report"
	"github.com/astrabox-dev/astrabox/internal/simulate"
	"github.com/astrabox-dev/astrabox/internal/testutil"
)

// suiteHistories plays the default suite (seed 1) on a fixture project and returns what the harness learnt
// about the provider and the histories.
func suiteHistories(t *testing.T, dir string) (*harness.LoadInfo, []*simulate.History) {
	t.Helper()
	c := collectSuite(t, dir)
	tg, o, info, ev := c.target, c.opts, c.info, c.ev
	if strings.Contains(dir, "/correct/") || strings.Contains(dir, "/examples/") {
		// Once checks account for what they saw, a correct provider must leave none of them undecided, but
		// for those its expect.json names as not reachable yet, with why.
		var exp expectation
		if data, err := os.ReadFile(filepath.Join(dir, "expect.json")); err == nil {
			_ = json.Unmarshal(data, &exp)
		}
		for _, res := range mustDecide(t, ev, tg, 1, o).Results {
			if res.Status == report.StatusNotExercised && !slices.Contains(exp.NotExercised, res.Check) {
				t.Errorf("%s was not exercised: %s", res.Check, res.Message)
			}
		}
	}
	return info, ev.Histories
}

// reach is what the default suite did to one provider, read from its histories.
type reach struct {
	hists []*simulate.History
}

func (r reach) calls(method string) []*simulate.CallRecord {
	var out []*simulate.CallRecord
	for _, h := range r.hists {
		out = append(out, h.CallsOf(simulate.Callback(method))...)
	}
	return out
}

// stepOf returns the played step a call was made in.
func stepOf(h *simulate.History, c *simulate.CallRecord) *simulate.Step {
	e := h.EventOf(c)
	if e == nil || h.Played == nil || e.Step < 1 || e.Step > len(h.Played.Steps) {
		return nil
	}
	return &h.Played.Steps[e.Step-1]
}

// isWrite tells whether a recorded request writes, as the double judged it when it applied the scenario's
// write faults: a declared service's request by its classification (an AWS GetSecretValue is a POST that
// reads), the double's own by its method.
func isWrite(rq simulate.Request) bool {
	if rq.Service != "" {
		return rq.Class.Write
	}
	m := strings.ToUpper(rq.Method)
	return m == "PUT" || m == "POST" || m == "DELETE"
}

// writesIn counts the write requests a call made.
func writesIn(h *simulate.History, c *simulate.CallRecord) int {
	n := 0
	for _, rq := range h.RequestsOf(c.Key) {
		if isWrite(rq) {
			n++
		}
	}
	return n
}

// mostCleanWrites is the most writes a returned call of a callback made in a step without faults.
func (r reach) mostCleanWrites(method string) int {
	most := 0
	for _, h := range r.hists {
		for _, c := range h.CallsOf(simulate.Callback(method)) {
			st := stepOf(h, c)
			if c.Outcome == simulate.OutcomeReturned && st != nil && st.Fault == nil && len(st.Double) == 0 {
				most = max(most, writesIn(h, c))
			}
		}
	}
	return most
}

// TestSuiteReachesEveryPath asserts, from the default suite's histories on every correct fixture and the
// reference provider, that it reached each path the provider implements: every offered user action
// performed on two replicas for one pending requirement; refreshes of the provider's own validity period and a
// reconnect retry after them; several Agents, creators and pool members; a 503 and a dropped answer on the
// writes of synchronize, recover, turns and user actions; host loss at each write position of a synchronize.
//
// The fixtures' histories are their recorded evidence (no Python: TestFixtures holds each recording to a live
// run in the long lane, and checktest proves under -short that no check was left not_exercised); the
// reference provider, which has no recording, is played live, and so is every fixture in the long lane.
func TestSuiteReachesEveryPath(t *testing.T) {
	dirs, _ := filepath.Glob("../../testdata/providers/correct/*")
	for _, dir := range dirs {
		name := "correct/" + filepath.Base(dir)
		if ownedByRealClients(name) {
			continue // TestRealClientFixtures runs it with the environment it needs
		}
		t.Run("recorded/"+filepath.Base(dir), func(t *testing.T) {
			ev := recorded(t, name).Evidence
			assertSuiteReach(t, ev.Load, ev.Histories)
		})
	}
	if testing.Short() {
		t.Skip("the live runs start Python")
	}
	for _, dir := range append(dirs, "../../examples/providers/reference") {
		t.Run("live/"+filepath.Base(dir), func(t *testing.T) {
			if !strings.Contains(dir, "/examples/") {
				testutil.LongLane(t, "the suite live on every correct fixture")
			}
			if ownedByRealClients("correct/" + filepath.Base(dir)) {
				t.Skip("a real-client fixture: TestRealClientFixtures runs it with the environment it needs")
			}
			var exp expectation
			if data, err := os.ReadFile(filepath.Join(dir, "expect.json")); err == nil {
				if err := json.Unmarshal(data, &exp); err != nil {
					t.Fatalf("bad expect.json: %v", err)
				}
			}
			if exp.RequiresModule != "" && exec.Command("python3", "-c", "import "+exp.RequiresModule).Run() != nil {
				t.Skipf("python3 has no %s module", exp.RequiresModule)
			}
			info, hists := suiteHistories(t, dir)
			assertSuiteReach(t, info, hists)
		})
	}
}

// assertSuiteReach asserts TestSuiteReachesEveryPath's paths over one provider's suite histories.
func assertSuiteReach(t *testing.T, info *harness.LoadInfo, hists []*simulate.History) {
	t.Helper()
	r := reach{hists: hists}
	implements := func(m string) bool { return info.Methods[m].Overridden }
	if implements("perform_user_action") {
		r.assertUserActions(t)
	}
	if implements("prepare_turn") {
		r.assertRefreshes(t)
	}
	r.assertAgents(t)
	for _, m := range []string{"synchronize", "recover", "prepare_turn", "perform_user_action"} {
		if implements(m) {
			r.assertWriteFaults(t, m)
		}
	}
	if implements("synchronize") {
		r.assertHostLossAtEachWrite(t)
	}
}

// assertUserActions: each operation a not-ready state offered was performed on two replicas for the same
// pending requirement (the same state before each call).
func (r reach) assertUserActions(t *testing.T) {
	t.Helper()
	offered := map[string]bool{}
	type group struct{ replicas map[string]bool }
	groups := map[string]*group{}
	for _, h := range r.hists {
		last := map[string]string{}
		for _, c := range h.Calls() {
			st := c.Result
			isState := c.Outcome == simulate.OutcomeReturned && st != nil && st.Type == simulate.KindUserActionState
			switch c.Method {
			case "read_user_actions":
			case "perform_user_action":
				action, _ := c.Args["action_id"].(string)
				if before, ok := last[c.Ctx.Session]; ok && before != "" {
					k := h.Scenario + "|" + c.Ctx.Session + "|" + action + "|" + before
					if groups[k] == nil {
						groups[k] = &group{replicas: map[string]bool{}}
					}
					groups[k].replicas[c.Replica] = true
				}
			default:
				continue
			}
			if isState {
				key := ""
				if !st.Ready {
					key = stateKey(st)
					for _, a := range st.Actions {
						offered[a.ID] = true
					}
				}
				last[c.Ctx.Session] = key
			}
		}
	}
	if len(offered) == 0 {
		t.Errorf("no state offered an operation; the suite never met a pending requirement")
	}
	for id := range offered {
		ok := false
		for k, g := range groups {
			if strings.Split(k, "|")[2] == id && len(g.replicas) >= 2 {
				ok = true
			}
		}
		if !ok {
			t.Errorf("operation %q was offered but never performed on two replicas for one pending requirement", id)
		}
	}
}

// assertRefreshes: every finite validity returned was outlived by a write live more than twice as long, a
// refresh happened, and a reconnect retry of a refreshed attempt followed.
func (r reach) assertRefreshes(t *testing.T) {
	t.Helper()
	longest, live := 0.0, 0.0
	for _, h := range r.hists {
		for _, c := range h.CallsOf("prepare_turn") {
			if c.Result != nil && len(c.Result.TurnValiditySeconds) > 0 && string(c.Result.TurnValiditySeconds) != "null" {
				var v float64
				if _, err := fmt.Sscan(string(c.Result.TurnValiditySeconds), &v); err == nil {
					longest = max(longest, v)
				}
			}
		}
		for _, st := range h.Played.Steps {
			live = max(live, st.LiveFor.Seconds)
		}
	}
	if longest == 0 {
		return // no validity: nothing to refresh
	}
	if live <= 2*longest {
		t.Errorf("the longest live write is %g s, not more than twice the provider's validity %g s", live, longest)
	}
	refreshed, retried := map[string]bool{}, false
	for _, c := range r.calls("prepare_turn") {
		k := c.Ctx.Session + "/" + c.Ctx.Attempt
		if c.Ctx.Refresh {
			refreshed[k] = true
		} else if refreshed[k] {
			retried = true
		}
	}
	if len(refreshed) == 0 {
		t.Errorf("validity %g s was never refreshed", longest)
	}
	if !retried {
		t.Errorf("no reconnect retry of an attempt after its refresh")
	}
}

// assertAgents: two Agents of different creators, two of one creator, and one Agent synchronized by pool
// members on two replicas.
func (r reach) assertAgents(t *testing.T) {
	t.Helper()
	for _, h := range r.hists {
		creators := map[string]string{}
		replicas := map[string]map[string]bool{}
		for _, c := range h.CallsOf("synchronize") {
			creator := callContext(c).CreatorUserID
			creators[c.Ctx.Agent] = creator
			if replicas[c.Ctx.Agent] == nil {
				replicas[c.Ctx.Agent] = map[string]bool{}
			}
			replicas[c.Ctx.Agent][c.Replica] = true
		}
		byCreator := map[string]int{}
		for _, cr := range creators {
			byCreator[cr]++
		}
		pool := false
		for _, rs := range replicas {
			pool = pool || len(rs) >= 2
		}
		shared := false
		for _, n := range byCreator {
			shared = shared || n >= 2
		}
		if len(byCreator) >= 2 && shared && pool {
			return
		}
	}
	t.Errorf("no scenario synchronized Agents of two creators, two Agents of one creator and pool members on two replicas")
}

// assertWriteFaults: a write of the callback was answered 503, and one was dropped after it was applied.
func (r reach) assertWriteFaults(t *testing.T, method string) {
	t.Helper()
	if r.mostCleanWrites(method) == 0 {
		return // the provider's callback writes nothing
	}
	unavailable, dropped := false, false
	for _, h := range r.hists {
		for _, rq := range h.Requests {
			if rq.Callback != method || !isWrite(rq) {
				continue
			}
			unavailable = unavailable || rq.Status == 503
			dropped = dropped || rq.Dropped
		}
	}
	if !unavailable {
		t.Errorf("no write of %s was answered 503", method)
	}
	if !dropped {
		t.Errorf("no write of %s was dropped", method)
	}
}

// assertHostLossAtEachWrite: for each write position of the provider's synchronize, a synchronize lost its
// host while that write was held.
func (r reach) assertHostLossAtEachWrite(t *testing.T) {
	t.Helper()
	n := r.mostCleanWrites("synchronize")
	lost := map[int]bool{}
	for _, h := range r.hists {
		for _, c := range h.CallsOf("synchronize") {
			st := stepOf(h, c)
			if c.Outcome != simulate.OutcomeHostLoss || st == nil {
				continue
			}
			for _, d := range st.Double {
				if d.Kind == "hold" {
					lost[d.Write.N] = true
				}
			}
		}
	}
	for k := 1; k <= n; k++ {
		if !lost[k] {
			t.Errorf("synchronize makes %d write(s), but no host was lost while write %d was held", n, k)
		}
	}
}
