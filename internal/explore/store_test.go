package explore

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

const storeScenario = "name: saved\nsteps:\n  - {op: cold_start, session: s1, agent: agent-1, principal: alice}\n"

// store makes a failure store holding a saved scenario and the given last-failed.json.
func store(t *testing.T, record string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "failures")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "gen-settles-7.yaml"), []byte(storeScenario), 0o644); err != nil {
		t.Fatal(err)
	}
	if record != "" {
		if err := os.WriteFile(filepath.Join(dir, lastFailedFile), []byte(record), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// lastFailedWithin calls LastFailed with a bound, failing the test when it hangs (a FIFO used to).
func lastFailedWithin(t *testing.T, dir string) (int, []string, error) {
	t.Helper()
	type res struct {
		n      int
		checks []string
		err    error
	}
	ch := make(chan res, 1)
	go func() {
		scs, checks, err := LastFailed(dir)
		ch <- res{len(scs), checks, err}
	}()
	select {
	case r := <-ch:
		return r.n, r.checks, r.err
	case <-time.After(10 * time.Second):
		t.Fatal("LastFailed did not return within 10s")
		return 0, nil, nil
	}
}

// TestLastFailedTrustsNoHostileStore: a repository can carry .astrabox/failures, so a CI run with
// --last-failed reads whatever it holds. A symlink to /dev/zero (an out-of-memory crash before), a FIFO (a
// hang), an oversized record, and paths naming files outside the store (/etc/shadow, whose line was printed
// in the error) are each refused with a clear error that quotes no other file's content; the store's own
// record still loads.
func TestLastFailedTrustsNoHostileStore(t *testing.T) {
	foreign := filepath.Join(t.TempDir(), "shadow")
	if err := os.WriteFile(foreign, []byte("root:$6$FOREIGNCONTENT:19000:0:99999:7:::\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	yamlForeign := filepath.Join(filepath.Dir(foreign), "gen-settles-8.yaml")
	if err := os.WriteFile(yamlForeign, []byte("name: FOREIGNCONTENT\nsteps: [{op: nope}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		setup func(t *testing.T, dir string)
		want  string
	}{
		"symlink to /dev/zero": {func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, lastFailedFile))
			if err := os.Symlink("/dev/zero", filepath.Join(dir, lastFailedFile)); err != nil {
				t.Fatal(err)
			}
		}, "is a symbolic link"},
		"a FIFO": {func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, lastFailedFile))
			if err := syscall.Mkfifo(filepath.Join(dir, lastFailedFile), 0o644); err != nil {
				t.Skip("no FIFOs here:", err)
			}
		}, "is not a regular file"},
		"oversized": {func(t *testing.T, dir string) {
			big := `{"failures":[], "written": "2024-01-01T00:00:00Z"}` + strings.Repeat(" ", MaxLastFailedSize)
			if err := os.WriteFile(filepath.Join(dir, lastFailedFile), []byte(big), 0o644); err != nil {
				t.Fatal(err)
			}
		}, "more than the 1048576 astrabox writes there"},
		"absolute path outside the store": {func(t *testing.T, dir string) {
			rec := `{"failures":[{"check":"GEN-SETTLES","file":"` + foreign + `"}]}`
			os.WriteFile(filepath.Join(dir, lastFailedFile), []byte(rec), 0o644)
		}, "is not a scenario file of the failure store"},
		"a scenario-named file outside the store is read from the store": {func(t *testing.T, dir string) {
			rec := `{"failures":[{"check":"GEN-SETTLES","file":"` + yamlForeign + `"}]}`
			os.WriteFile(filepath.Join(dir, lastFailedFile), []byte(rec), 0o644)
		}, "gen-settles-8.yaml: no such file"},
		"a scenario that is a symlink": {func(t *testing.T, dir string) {
			os.Symlink(foreign, filepath.Join(dir, "gen-settles-9.yaml"))
			os.WriteFile(filepath.Join(dir, lastFailedFile), []byte(`{"failures":[{"check":"GEN-SETTLES","file":"gen-settles-9.yaml"}]}`), 0o644)
		}, "is a symbolic link"},
		"not a check ID": {func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, lastFailedFile), []byte(`{"failures":[{"check":"\u001b[2J","file":"gen-settles-7.yaml"}]}`), 0o644)
		}, "is not a check ID"},
		"not JSON": {func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, lastFailedFile), []byte("root:x:0:0"), 0o644)
		}, "not a record of failures written by astrabox"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			dir := store(t, `{"failures":[{"check":"GEN-SETTLES","file":"gen-settles-7.yaml"}]}`)
			tc.setup(t, dir)
			_, _, err := lastFailedWithin(t, dir)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "FOREIGNCONTENT") {
				t.Errorf("the error quotes a foreign file: %v", err)
			}
		})
	}
	// The store's own record, with an old absolute path or a bare name, loads.
	dir := store(t, "")
	rec := `{"written":"2024-01-01T00:00:00Z","failures":[{"check":"GEN-SETTLES","file":"` + filepath.Join(dir, "gen-settles-7.yaml") + `"},{"check":"GEN-SETTLES","file":"gen-settles-7.yaml"}]}`
	os.WriteFile(filepath.Join(dir, lastFailedFile), []byte(rec), 0o644)
	n, checks, err := lastFailedWithin(t, dir)
	if err != nil || n != 2 || len(checks) != 1 || checks[0] != "GEN-SETTLES" {
		t.Fatalf("own record: %d scenarios, checks %v, %v", n, checks, err)
	}
}

// TestLastFailedSaysWhenNothingIsRecorded: a missing record and an empty one are told apart, each plainly.
func TestLastFailedSaysWhenNothingIsRecorded(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "failures")
	if _, _, err := LastFailed(dir); err == nil || !strings.Contains(err.Error(), "no previous failures recorded") {
		t.Errorf("missing: %v", err)
	}
	if err := saveLastFailed(dir, nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := LastFailed(dir); !errors.Is(err, ErrNothingRecorded) || !strings.Contains(err.Error(), "nothing to re-run") {
		t.Errorf("empty: %v", err)
	}
}
