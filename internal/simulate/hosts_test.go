package simulate

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/astrabox-dev/astrabox/internal/harness"
)

func hostsOptions(t *testing.T) Options {
	t.Helper()
	dir, _ := filepath.Abs(filepath.Join("testdata", "providers", "hosts"))
	return Options{Python: "python3", ProjectDir: dir, Target: "hosts_provider:Hosts", Paths: []string{dir}, Config: testConfig(), Limits: harness.DefaultLimits()}
}

// hostsRun parses hostsScenario and gives it a context of 90 s, the hosts provider's options and the run's
// hosts (fork servers seeded with the scenario's seed), all closed when the test ends.
func hostsRun(t *testing.T) (*Scenario, context.Context, Options, *Hosts) {
	t.Helper()
	sc, err := ParseScenario("hosts.yaml", []byte(hostsScenario))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	o := hostsOptions(t)
	hosts := NewHosts(ctx, o.Python, o.ProjectDir, sc.Seed, nil)
	t.Cleanup(hosts.Close)
	return sc, ctx, o, hosts
}

const hostsScenario = `
name: hosts
seed: 11
replicas: 2
principals:
  alice: {consent: granted}
  exiter: {consent: granted}
  interrupter: {consent: granted}
steps:
  - op: prewarm
    agent: agent-1
    boxes: 1
  - op: claim
    session: s1
    agent: agent-1
    principal: alice
    replica: r2
  - op: cold_start
    session: s2
    agent: agent-1
    principal: exiter
  - op: cold_start
    session: s3
    agent: agent-1
    principal: interrupter
    replica: r2
`

func TestHashSeedsDifferPerReplicaAndRepeat(t *testing.T) {
	a, b := unforked(5), unforked(5)
	if a.HashSeed("r1") != b.HashSeed("r1") {
		t.Fatal("the same seed and name gave different hash seeds")
	}
	if a.HashSeed("r1") == a.HashSeed("r2") {
		t.Fatal("two replicas got the same hash seed")
	}
	if a.HashSeed("r1") == unforked(6).HashSeed("r1") {
		t.Fatal("two run seeds gave the same hash seed")
	}
}

// TestEachReplicaIsItsOwnHost plays a scenario through fork servers and requires each replica to see its own
// home and temporary directory (a file one wrote is not seen by another), its own string-hash order, and the
// directories to be gone afterwards; the same scenario without fork servers gives the same history.
func TestEachReplicaIsItsOwnHost(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python")
	}
	sc, ctx, o, hosts := hostsRun(t)
	o.Hosts = hosts
	var runs [][]byte
	var first *History
	for i := 0; i < 2; i++ {
		h, err := Run(ctx, sc, o)
		if err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first = h
		}
		b, _ := json.Marshal(h)
		runs = append(runs, b)
	}
	cold := o
	cold.Hosts = nil
	h, err := Run(ctx, sc, cold)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(h)
	runs = append(runs, b)
	// The declaration names the host's directories, which are new every run; the rest must repeat.
	for i := 1; i < len(runs); i++ {
		if !bytes.Equal(runs[0], runs[i]) && !bytes.Contains(runs[i], []byte("astrabox-host-")) {
			t.Errorf("run %d differs from the first", i+1)
		}
	}
	for _, h := range []*History{first, h} {
		for _, c := range h.CallsOf("plan") {
			if c.Replica == "r1" && c.Result != nil {
				var d map[string]any
				_ = json.Unmarshal(c.Result.Declaration, &d)
				if got, want := strings.Join(strs(d["order"]), ","), firstOrder(t, first); got != want {
					t.Errorf("r1's set order changed between runs: %s, then %s", want, got)
				}
			}
		}
	}
	decl := map[string]map[string]any{}
	for _, c := range first.CallsOf("plan") {
		if c.Result == nil {
			t.Fatalf("plan on %s did not return: %s", c.Replica, c.ProcessError)
		}
		var d map[string]any
		if err := json.Unmarshal(c.Result.Declaration, &d); err != nil {
			t.Fatal(err)
		}
		if d["seen"] != nil && d["seen"] != c.Replica {
			t.Errorf("plan on %s saw a marker file written by %v", c.Replica, d["seen"])
		}
		decl[c.Replica] = d
	}
	r1, r2 := decl["r1"], decl["r2"]
	if r1 == nil || r2 == nil {
		t.Fatalf("plan did not run on both replicas: %v", decl)
	}
	if r1["home"] == r2["home"] || r1["tmp"] == r2["tmp"] {
		t.Errorf("replicas share a home or temporary directory: %v / %v", r1, r2)
	}
	if os.Getenv("PYTHONUSERBASE") == "" {
		// sysconfig's user base follows HOME: the fork server computes sysconfig's paths once for every
		// replica, and must leave nothing of its own environment in sysconfig's caches.
		for _, d := range []map[string]any{r1, r2} {
			if ub, _ := d["userbase"].(string); !strings.HasPrefix(ub, d["home"].(string)+string(os.PathSeparator)) {
				t.Errorf("sysconfig's user base %q is not under the replica's home %q", ub, d["home"])
			}
		}
	}
	if strings.Join(strs(r1["order"]), ",") == strings.Join(strs(r2["order"]), ",") {
		t.Errorf("both replicas iterate a set of strings in the same order: %v", r1["order"])
	}
	for _, d := range decl {
		if _, err := os.Stat(d["tmp"].(string)); !os.IsNotExist(err) {
			t.Errorf("host directory %s is still there after the scenario (%v)", d["tmp"], err)
		}
	}
}

func firstOrder(t *testing.T, h *History) string {
	t.Helper()
	for _, c := range h.CallsOf("plan") {
		if c.Replica == "r1" && c.Result != nil {
			var d map[string]any
			_ = json.Unmarshal(c.Result.Declaration, &d)
			return strings.Join(strs(d["order"]), ",")
		}
	}
	t.Fatal("no plan on r1")
	return ""
}

func strs(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

// TestLeftoverWorkIsSettledAndAttributed requires a write and a print a thread makes after synchronize
// returned to be waited for, recorded as synchronize's background work, and a SystemExit or
// KeyboardInterrupt from prepare_session to end the replica as on the platform's host.
func TestLeftoverWorkIsSettledAndAttributed(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python")
	}
	sc, err := ParseScenario("hosts.yaml", []byte(hostsScenario))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	h, err := Run(ctx, sc, hostsOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	syncs := h.CallsOf("synchronize")
	if len(syncs) == 0 {
		t.Fatal("no synchronize call")
	}
	var late *Request
	for i, rq := range h.Requests {
		if strings.HasPrefix(rq.Path, "/v1/records/late/") {
			late = &h.Requests[i]
		}
	}
	if late == nil {
		t.Fatal("the late write was not recorded")
	}
	if late.Call != syncs[0].Key || !late.Background || late.Callback != "synchronize" {
		t.Errorf("late write attributed to %q (%s, background %v), want %s", late.Call, late.Callback, late.Background, syncs[0].Key)
	}
	if late.ApplyOrder <= syncs[0].ApplyMark {
		t.Errorf("late write applied at %d (status %d, applied %v), not after synchronize settled at %d", late.ApplyOrder, late.Status, late.Applied, syncs[0].ApplyMark)
	}
	printed := false
	for _, e := range h.Events {
		if e.Kind == EventBackground && e.Origin == syncs[0].Key && strings.Contains(e.Stdout, "late-output") {
			printed = true
		}
	}
	if !printed {
		t.Error("the output made after synchronize returned is not in a background event of synchronize")
	}
	for _, c := range h.CallsOf("prepare_session") {
		want := ""
		switch c.Ctx.Principal {
		case "exiter":
			want = string(harness.KindExited)
		case "interrupter":
			want = string(harness.KindSignaled)
		default:
			continue
		}
		if c.Outcome != OutcomeDied || c.ProcessKind != want || c.Error == nil {
			t.Errorf("prepare_session of %s: outcome %s kind %s error %v, want died/%s with the exception", c.Ctx.Principal, c.Outcome, c.ProcessKind, c.Error, want)
		}
	}
}

// TestASlotHasItsOwnForkServersWithTheSameSeeds plays the same scenario on slot 0's and slot 1's hosts of one
// run: each slot forks from servers of its own (different processes), yet every replica keeps its string-hash
// order, so the history is the same; closing the run's hosts ends every slot's servers.
func TestASlotHasItsOwnForkServersWithTheSameSeeds(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python")
	}
	sc, ctx, o, hosts := hostsRun(t)
	if hosts.Slot(0) != hosts {
		t.Fatal("slot 0 is not the run's hosts")
	}
	slot := hosts.Slot(1)
	if slot.HashSeed("r1") != hosts.HashSeed("r1") {
		t.Fatal("a slot's replica r1 has another hash seed")
	}
	var orders []string
	var runs [][]byte
	for _, h := range []*Hosts{hosts, slot} {
		o.Hosts = h
		hist, err := Run(ctx, sc, o)
		if err != nil {
			t.Fatal(err)
		}
		orders = append(orders, firstOrder(t, hist))
		b, _ := json.Marshal(hist)
		runs = append(runs, b)
	}
	if orders[0] != orders[1] {
		t.Errorf("r1's set order differs between the slots: %s, then %s", orders[0], orders[1])
	}
	if !bytes.Equal(runs[0], runs[1]) && !bytes.Contains(runs[1], []byte("astrabox-host-")) {
		t.Error("the scenario's history differs between the slots")
	}
	a, b := hosts.ForkServer("r1"), slot.ForkServer("r1")
	if a == nil || b == nil || a.PID() == b.PID() {
		t.Fatalf("slot 1 does not have a fork server of its own for r1: %v, %v", a, b)
	}
	servers := hosts.ForkServers()
	if len(servers) != 4 { // r1 and r2 of each slot
		t.Fatalf("%d fork servers ran, want 4 (two replicas, two slots)", len(servers))
	}
	slot.Close() // a slot's Close leaves the run's servers alone
	if !processAlive(b.PID()) {
		t.Fatal("closing a slot's hosts ended its fork server; only the run's Close does")
	}
	hosts.Close()
	for _, z := range servers {
		if processAlive(z.PID()) {
			t.Errorf("fork server %d is still running after the hosts closed", z.PID())
		}
	}
	if hosts.Slot(2).ForkServer("r1") != nil {
		t.Error("closed hosts started a fork server for a new slot")
	}
}

// processAlive reports whether pid is a running process (not gone, not a zombie).
func processAlive(pid int) bool {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(raw)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && i+2 < len(s) && s[i+2] != 'Z'
}
