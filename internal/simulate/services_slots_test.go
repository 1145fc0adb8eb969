package simulate

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/astrabox-dev/astrabox/internal/egress"
	"github.com/astrabox-dev/astrabox/internal/services"
)

// slotSpecs are a run fake (a ledger that keeps what is POSTed) and WireMock stubs with a stateful scenario
// (WireMock's own "To do list" example), the two kinds of stand-in that hold state.
func slotSpecs(t *testing.T) []services.Spec {
	t.Helper()
	dir, _ := filepath.Abs(filepath.Join("testdata", "slots"))
	return []services.Spec{
		{Name: "ledger", URLs: []string{"https://ledger.corp.example"}, Hosts: []string{"ledger.corp.example:443"},
			Run: "exec python3 ledger.py --port {port}", Dir: dir, Ready: "/", ReadyTimeout: 30 * time.Second, Reset: services.ResetRequest},
		{Name: "todo", URLs: []string{"https://todo.corp.example"}, Hosts: []string{"todo.corp.example:443"},
			Stubs: filepath.Join(dir, "todo")},
	}
}

// call sends one request to a slot's stand-in of a service, as the double hands it on. It is safe to call
// from any goroutine.
func call(_ *testing.T, s *Services, service, method, path, body string) (int, string) {
	req := httptest.NewRequest(method, "https://"+service+".corp.example"+path, strings.NewReader(body))
	rec := httptest.NewRecorder()
	s.upstreams()[service].Handler.ServeHTTP(rec, req)
	out, _ := io.ReadAll(rec.Result().Body)
	return rec.Code, string(out)
}

func ledgerEntries(t *testing.T, s *Services) []string {
	t.Helper()
	got, err := entries(t, s)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// entries lists a slot's ledger; safe from any goroutine.
func entries(t *testing.T, s *Services) ([]string, error) {
	code, body := call(t, s, "ledger", http.MethodGet, "/v1/entries", "")
	var doc struct{ Entries []string }
	if code != 200 || json.Unmarshal([]byte(body), &doc) != nil {
		return nil, fmt.Errorf("GET ledger = %d %s", code, body)
	}
	return doc.Entries, nil
}

func fakeOf(t *testing.T, s *Services) *services.Fake {
	t.Helper()
	f, ok := s.standIns["ledger"].(*services.Fake)
	if !ok {
		t.Fatalf("ledger stand-in is %T", s.standIns["ledger"])
	}
	return f
}

// TestServiceSlotsNeverShareState: each scenario slot has its own instance of every stand-in (its own fake
// process on its own port, its own stub scenario state); a write, a scenario state change or a reset on one
// slot is never seen on the other, also while both are used at once; a fake that dies in any slot is
// reported with its instance and output; the run's Close stops every slot's fake.
func TestServiceSlotsNeverShareState(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	svcs, err := StartServices(ctx, slotSpecs(t), egress.PolicyRefuse)
	if err != nil {
		t.Fatal(err)
	}
	defer svcs.Close()
	slots, err := svcs.Slots(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(slots) != 2 || slots[0] != svcs {
		t.Fatalf("slots = %v; the first slot must be the run's own set", slots)
	}
	if again, err := svcs.Slots(ctx, 2); err != nil || again[1] != slots[1] {
		t.Fatalf("asking for the same slots again started new ones: %v", err)
	}
	a, b := slots[0], slots[1]
	fa, fb := fakeOf(t, a), fakeOf(t, b)
	if fa.Port() == fb.Port() || fa.Pid() == fb.Pid() || fa.Pid() == 0 || fb.Pid() == 0 {
		t.Fatalf("the slots share a fake: ports %d %d, pids %d %d", fa.Port(), fb.Port(), fa.Pid(), fb.Pid())
	}

	// A run fake: writes and resets stay in their slot.
	for i := 0; i < 3; i++ {
		call(t, a, "ledger", http.MethodPost, "/v1/entries", fmt.Sprintf("a-%d", i))
	}
	call(t, b, "ledger", http.MethodPost, "/v1/entries", "b-0")
	if got := ledgerEntries(t, a); strings.Join(got, ",") != "a-0,a-1,a-2" {
		t.Fatalf("slot 1 ledger = %v", got)
	}
	if got := ledgerEntries(t, b); strings.Join(got, ",") != "b-0" {
		t.Fatalf("slot 2 ledger = %v", got)
	}
	if err := b.reset(ctx); err != nil {
		t.Fatal(err)
	}
	if got := ledgerEntries(t, a); len(got) != 3 {
		t.Fatalf("a reset of slot 2 cleared slot 1: %v", got)
	}

	// WireMock stubs: the scenario state machine is per slot.
	if code, _ := call(t, a, "todo", http.MethodPost, "/todo/items", "Cancel newspaper subscription"); code != 201 {
		t.Fatalf("POST todo = %d", code)
	}
	if _, body := call(t, b, "todo", http.MethodGet, "/todo/items", ""); strings.Contains(body, "newspaper") {
		t.Fatalf("slot 2 saw slot 1's scenario state: %s", body)
	}
	if err := b.reset(ctx); err != nil {
		t.Fatal(err)
	}
	if _, body := call(t, a, "todo", http.MethodGet, "/todo/items", ""); !strings.Contains(body, "newspaper") {
		t.Fatalf("a reset of slot 2 reset slot 1's scenario: %s", body)
	}

	// Both slots at once, each a scenario's worth of reset, writes and reads: each sees exactly its own.
	var wg sync.WaitGroup
	errs := make([]string, 2)
	for i, s := range slots {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for round := 0; round < 15; round++ {
				if err := s.reset(ctx); err != nil {
					errs[i] = err.Error()
					return
				}
				n := 1 + (round+i)%3
				var want []string
				for k := 0; k < n; k++ {
					entry := fmt.Sprintf("slot%d-round%d-%d", i+1, round, k)
					want = append(want, entry)
					call(t, s, "ledger", http.MethodPost, "/v1/entries", entry)
				}
				if got, err := entries(t, s); err != nil || strings.Join(got, ",") != strings.Join(want, ",") {
					errs[i] = fmt.Sprintf("round %d: ledger = %v (%v), want %v", round, got, err, want)
					return
				}
			}
		}()
	}
	wg.Wait()
	for i, e := range errs {
		if e != "" {
			t.Errorf("slot %d: %s", i+1, e)
		}
	}

	// A fake that dies in the second slot is reported by the run, naming the instance, with its output.
	pa, pb := fa.Pid(), fb.Pid()
	if err := syscall.Kill(-pb, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var alive error
	for i := 0; i < 1000 && alive == nil; i++ { // until the kit has reaped the killed fake (at most 10 s)
		time.Sleep(10 * time.Millisecond)
		alive = svcs.Alive()
	}
	if alive == nil || !strings.Contains(alive.Error(), "service ledger (instance 2): the fake exited during the run") ||
		!strings.Contains(alive.Error(), fmt.Sprintf("as pid %d", pb)) {
		t.Fatalf("Alive = %v", alive)
	}
	if err := b.Close(); err != nil || syscall.Kill(pa, 0) != nil {
		t.Fatalf("closing a slot other than the run's own stopped something: %v", err)
	}
	svcs.Close()
	if syscall.Kill(pa, 0) == nil {
		t.Fatalf("the first slot's fake %d outlived the run's Close", pa)
	}
}

// TestServiceSlotThatCannotStartIsAClearError: an instance that cannot start (here a fake that also binds
// a fixed port, which only one instance can have) fails with its instance and its output, and the instances
// started with it are stopped.
func TestServiceSlotThatCannotStartIsAClearError(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir, _ := filepath.Abs(filepath.Join("testdata", "slots"))
	lock := filepath.Join(t.TempDir(), "ledger.lock")
	// The first instance takes the lock file and serves; a second one finds it taken and exits.
	run := fmt.Sprintf("if mkdir %s 2>/dev/null; then exec python3 ledger.py --port {port}; else echo 'ledger: state directory %s is in use' >&2; exit 5; fi", lock, lock)
	specs := []services.Spec{{Name: "ledger", URLs: []string{"https://ledger.corp.example"}, Hosts: []string{"ledger.corp.example:443"},
		Run: run, Dir: dir, Ready: "/", ReadyTimeout: 30 * time.Second, Reset: services.ResetNone}}
	svcs, err := StartServices(ctx, specs, egress.PolicyRefuse)
	if err != nil {
		t.Fatal(err)
	}
	defer svcs.Close()
	_, err = svcs.Slots(ctx, 2)
	if err == nil || !strings.Contains(err.Error(), "service ledger (instance 2): the fake exited before it answered") ||
		!strings.Contains(err.Error(), "is in use") {
		t.Fatalf("err = %v", err)
	}
	if code, _ := call(t, svcs, "ledger", http.MethodGet, "/", ""); code != 200 {
		t.Fatalf("the first slot's fake stopped answering: %d", code)
	}
}
