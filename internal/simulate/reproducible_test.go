package simulate

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestSameSeedSameHistory plays scenarios twice from scratch (fresh replica processes, a fresh double on new
// ports) and requires byte-identical history JSON: wall-clock durations, ports, process ids and tokens must
// not show. The scenarios talk to the double, lose a host, recover and time out.
func TestSameSeedSameHistory(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python (skipped under -short)")
	}
	t.Parallel()
	for _, tc := range []struct {
		name, provider, yaml string
		reseed               bool
	}{
		{"lifecycle", "probe", lifecycleYAML, true},
		{"unresolved", "probe", unresolvedYAML, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			first := mustJSON(t, play(t, tc.provider, tc.yaml))
			again, err := playFresh(tc.provider, tc.yaml)
			if err != nil {
				t.Fatal(err)
			}
			second := mustJSON(t, again)
			if !bytes.Equal(first, second) {
				at := 0
				for at < len(first) && at < len(second) && first[at] == second[at] {
					at++
				}
				lo := max(0, at-300)
				t.Fatalf("histories differ at byte %d:\nfirst  ...%s\nsecond ...%s", at, first[lo:min(len(first), at+200)], second[lo:min(len(second), at+200)])
			}
			if len(again.Requests) == 0 {
				t.Errorf("the scenario made no double requests; it does not test what it claims")
			}
			// Temporary directories made during the run would differ between runs; the checkout itself may
			// live under the temporary directory, so its path is removed first.
			repo, _ := filepath.Abs(filepath.Join("..", ".."))
			scrubbed := bytes.ReplaceAll(first, []byte(repo), []byte("<repo>"))
			tmp := regexp.QuoteMeta(strings.TrimSuffix(os.TempDir(), "/") + "/")
			for _, leak := range []*regexp.Regexp{
				regexp.MustCompile(`127\.0\.0\.1:\d+`), // the double's ports
				regexp.MustCompile(`"(duration_ns|pid)":`),
				regexp.MustCompile(tmp),
			} {
				if m := leak.Find(scrubbed); m != nil {
					t.Errorf("run-dependent value in the history: %s", m)
				}
			}
			if !tc.reseed {
				return
			}
			// A different seed gives different identifiers.
			sc, err := ParseScenario("reseeded.yaml", []byte(tc.yaml))
			if err != nil {
				t.Fatal(err)
			}
			sc.Seed = 99
			other, err := runParsed(sc, tc.provider)
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Equal(mustJSON(t, other), first) {
				t.Errorf("seed 99 gave the same history as the scenario's own seed")
			}
		})
	}
}
