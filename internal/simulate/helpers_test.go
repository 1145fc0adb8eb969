package simulate

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/astrabox-dev/astrabox/internal/harness"
)

// The example providers under testdata/providers, by short name.
var testProviders = map[string]struct{ dir, target string }{
	"basic":     {"basic", "basic_provider:Basic"},
	"probe":     {"probe", "probe_provider:Probe"},
	"defaults":  {"defaults", "defaults_provider:Defaults"},
	"slow-sync": {"defaults", "defaults_provider:SlowSync"},
	"none":      {"", ""},
}

var (
	runCacheMu sync.Mutex
	runCache   = map[string]*cachedRun{}
)

type cachedRun struct {
	once sync.Once
	h    *History
	err  error
}

// play parses a scenario given as YAML and runs it against one of the example providers through the real
// harness. Histories are cached by provider and text, so that tests of several clauses can share one run.
func play(t *testing.T, provider, yamlText string) *History {
	t.Helper()
	runCacheMu.Lock()
	c := runCache[provider+"\x00"+yamlText]
	if c == nil {
		c = &cachedRun{}
		runCache[provider+"\x00"+yamlText] = c
	}
	runCacheMu.Unlock()
	c.once.Do(func() { c.h, c.err = playFresh(provider, yamlText) })
	if c.err != nil {
		t.Fatal(c.err)
	}
	return c.h
}

func playFresh(provider, yamlText string) (*History, error) {
	sc, err := ParseScenario(t0name(yamlText), []byte(yamlText))
	if err != nil {
		return nil, err
	}
	return runParsed(sc, provider)
}

func t0name(yamlText string) string {
	for _, line := range strings.Split(yamlText, "\n") {
		if strings.HasPrefix(line, "name:") {
			return strings.TrimSpace(strings.TrimPrefix(line, "name:")) + ".yaml"
		}
	}
	return "inline.yaml"
}

func runParsed(sc *Scenario, provider string) (*History, error) {
	p, ok := testProviders[provider]
	if !ok {
		panic("unknown test provider " + provider)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	o := Options{Python: "python3", Config: testConfig(), Limits: harness.DefaultLimits()}
	if p.target != "" {
		dir, _ := filepath.Abs(filepath.Join("testdata", "providers", p.dir))
		o.ProjectDir, o.Target, o.Paths = dir, p.target, []string{dir}
	} else {
		o.ProjectDir, _ = filepath.Abs("testdata")
	}
	return Run(ctx, sc, o)
}

// stepEvents returns the events of one step (1-based), in order.
func stepEvents(h *History, step int) []*Event {
	var out []*Event
	for _, e := range h.Events {
		if e.Step == step {
			out = append(out, e)
		}
	}
	return out
}

// callsIn returns the calls of one method made during one step (0: any step).
func callsIn(h *History, step int, method Callback) []*CallRecord {
	var out []*CallRecord
	for _, e := range h.Events {
		if e.Call != nil && e.Call.Method == method && (step == 0 || e.Step == step) {
			out = append(out, e.Call)
		}
	}
	return out
}

// codes returns the refusal codes of one step (0: any step).
func codes(h *History, step int) []string {
	var out []string
	for _, e := range h.Events {
		if e.Code != "" && (step == 0 || e.Step == step) {
			out = append(out, e.Code)
		}
	}
	return out
}

// hasCode tells whether a step (0: any) has an outcome with this code.
func hasCode(h *History, step int, code string) bool {
	for _, c := range codes(h, step) {
		if c == code {
			return true
		}
	}
	return false
}

// engineStarts returns the engine activations of a session ("" for prewarm initializations).
func engineStarts(h *History, session string) []*Event {
	var out []*Event
	for _, e := range h.Events {
		if e.Engine != nil && e.Engine.Session == session {
			out = append(out, e)
		}
	}
	return out
}

// writes returns the engine write events (input of an attempt written), by attempt.
func writes(h *History, attempt string) []*Event {
	var out []*Event
	for _, e := range h.Events {
		if e.Kind == EventEngine && e.Data != nil && e.Data["attempt"] == attempt {
			out = append(out, e)
		}
	}
	return out
}

// deliveries returns the deliveries made from one call.
func deliveries(h *History, callKey string) []*Delivery {
	var out []*Delivery
	for _, e := range h.Events {
		if e.Delivery != nil && e.Delivery.From == callKey {
			out = append(out, e.Delivery)
		}
	}
	return out
}

func inventory(h *History, id string) *InventoryBox {
	for i := range h.Inventory {
		if h.Inventory[i].ID == id {
			return &h.Inventory[i]
		}
	}
	return nil
}

// resultFile returns the content of a file a call returned.
func resultFile(c *CallRecord, name string) []byte {
	if c == nil || c.Result == nil {
		return nil
	}
	for _, f := range c.Result.Files {
		if f.Name == name {
			return f.Content
		}
	}
	return nil
}

// ctxArg returns the "context" argument a call was made with, as its typed record.
func ctxArg(c *CallRecord) ContextArg {
	ctx, err := c.Context()
	if err != nil {
		panic(err)
	}
	return ctx
}

// opArg returns the operation a synchronize or recover call was about.
func opArg(c *CallRecord) OperationArg {
	op, err := c.Operation()
	if err != nil || op == nil {
		panic(fmt.Sprintf("%s has no operation: %v", c.Key, err))
	}
	return *op
}

// seqOf returns the sequence number of the event holding a call.
func seqOf(h *History, c *CallRecord) int {
	if e := h.EventOf(c); e != nil {
		return e.Seq
	}
	return -1
}

func dumpOnFailure(t *testing.T, h *History) {
	t.Helper()
	t.Cleanup(func() {
		if t.Failed() {
			for _, e := range h.Events {
				t.Logf("%3d step %d %-8s %-3s %s %s", e.Seq, e.Step, e.Kind, e.Replica, e.Code, e.Message)
			}
		}
	})
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
