package explore

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/astrabox-dev/astrabox/internal/simulate"
)

// depthCase is a broken fixture whose breach needs several conditions in order: the scenario of its breach
// in its fewest steps (testdata/depth/<fixture>.yaml), a text the failure must hold, and variations that
// each drop one condition or break its order, which must not fail.
type depthCase struct {
	fixture, contains string
	controls          map[string]func(sc *simulate.Scenario)
}

func without(i int) func(sc *simulate.Scenario) {
	return func(sc *simulate.Scenario) { sc.Steps = slices.Delete(sc.Steps, i, i+1) }
}

func swap(i, j int) func(sc *simulate.Scenario) {
	return func(sc *simulate.Scenario) { sc.Steps[i], sc.Steps[j] = sc.Steps[j], sc.Steps[i] }
}

func onReplica(i int, r string) func(sc *simulate.Scenario) {
	return func(sc *simulate.Scenario) { sc.Steps[i].Replica = r }
}

var depthCases = []depthCase{
	{"recover-truth-superseded", "PUT /v1/records/agents/agent-1", map[string]func(*simulate.Scenario){
		"no record written before":        without(0),
		"no configuration change":         without(1),
		"released before recover":         swap(3, 4),
		"no write held when host is lost": func(sc *simulate.Scenario) { sc.Steps[2].Double = nil },
	}},
	{"recover-truth-fenced-agent", "PUT /v1/records/agents/agent-1", map[string]func(*simulate.Scenario){
		"one operation lost":                without(1),
		"recovered on two replicas":         onReplica(3, "r2"),
		"released between the two recovers": swap(3, 4),
		"the second write not held":         func(sc *simulate.Scenario) { sc.Steps[1].Double = nil },
		"the second recovered only":         without(2),
	}},
	{"ua-authority-read-cache", "let 1 turn(s) through while the principal's consent was pending", map[string]func(*simulate.Scenario){
		"no state read":            without(1),
		"state read while pending": swap(1, 2),
		"turn on another replica":  onReplica(3, "r2"),
		"consent still granted":    without(2),
		"host of the read lost first": func(sc *simulate.Scenario) {
			sc.Steps = slices.Insert(sc.Steps, 3, simulate.Step{Op: simulate.OpHostLoss, Replica: "r1"})
		},
	}},
	{"leak-cross-session-reattach", "for principal alice's session s1 returned", map[string]func(*simulate.Scenario){
		"reattached on another replica":  onReplica(2, "r2"),
		"second Session elsewhere":       onReplica(1, "r2"),
		"the last Session is reattached": func(sc *simulate.Scenario) { sc.Steps[2].Session = "s2" },
	}},
}

// TestDeepFixturesBreakTheirClauseOnlyInOrder proves that each fixture written to need several conditions in
// order really breaks its clause (expect.json's fails, or explore_fails when the default suite misses it) when they all hold, with the breach in the
// failure (the late write, the turn let through, the other principal's credential), and that dropping any
// one condition, or playing two of them in the other order, breaks nothing. The default suite's verdict on
// these fixtures is held by the conformance fixture test.
func TestDeepFixturesBreakTheirClauseOnlyInOrder(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python (skipped under -short)")
	}
	for _, c := range depthCases {
		t.Run(c.fixture, func(t *testing.T) {
			dir := filepath.Join("..", "..", "testdata", "providers", "broken", c.fixture)
			var exp struct {
				Fails        []string `json:"fails"`
				ExploreFails []string `json:"explore_fails"`
			}
			data, err := os.ReadFile(filepath.Join(dir, "expect.json"))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(data, &exp); err != nil {
				t.Fatal(err)
			}
			// The clause broken: the default suite's verdict, or the one only exploration finds.
			want := exp.Fails
			if len(want) == 0 {
				want = exp.ExploreFails
			}
			if len(want) == 0 {
				t.Fatal("expect.json names no clause in fails or explore_fails")
			}
			breach, err := simulate.LoadScenario(filepath.Join("testdata", "depth", c.fixture+".yaml"))
			if err != nil {
				t.Fatal(err)
			}
			env, w := setup(t, dir, 1)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			judged := func(sc *simulate.Scenario) ([]string, map[string]string) {
				t.Helper()
				if err := sc.Validate(); err != nil {
					t.Fatalf("%s: %v", sc.Name, err)
				}
				env.Adjust(sc)
				ids, msgs, _, err := judge(ctx, env, w, sc, Options{})
				if err != nil {
					t.Fatal(err)
				}
				return ids, msgs
			}
			ids, msgs := judged(clone(breach))
			if !reflect.DeepEqual(ids, want) {
				t.Fatalf("the breach scenario failed %v, want exactly %v: %v", ids, want, msgs)
			}
			if m := msgs[ids[0]]; !strings.Contains(m, c.contains) {
				t.Errorf("%s failed without the breach the fixture claims: %q lacks %q", ids[0], m, c.contains)
			}
			for name, change := range c.controls {
				sc := clone(breach)
				change(sc)
				if ids, msgs := judged(sc); len(ids) > 0 {
					t.Errorf("%s: failed %v without every condition in order: %v", name, ids, msgs)
				}
			}
		})
	}
}

// TestEveryExploreOnlyFixtureHasItsDepthCase holds every broken fixture whose expect.json names
// explore_fails (a breach the default suite does not reach) to a case above, so that its breach is proven.
func TestEveryExploreOnlyFixtureHasItsDepthCase(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "providers", "broken", "*", "expect.json"))
	if len(files) == 0 {
		t.Fatal("no broken fixture found")
	}
	covered := map[string]bool{}
	for _, c := range depthCases {
		covered[c.fixture] = true
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var exp struct {
			Fails        []string `json:"fails"`
			ExploreFails []string `json:"explore_fails"`
		}
		if err := json.Unmarshal(data, &exp); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		name := filepath.Base(filepath.Dir(f))
		if len(exp.ExploreFails) > 0 && !covered[name] {
			t.Errorf("%s names explore_fails %v but has no depth case (testdata/depth/%s.yaml and depthCases)", name, exp.ExploreFails, name)
		}
		for _, id := range exp.ExploreFails {
			if slices.Contains(exp.Fails, id) {
				t.Errorf("%s names %s in both fails and explore_fails", name, id)
			}
		}
	}
}
