package conformance

import (
	"strings"
	"testing"
)

// TestLeakLogFindsSplitRecasedAndFiledSecrets proves that each fixture of issue 25.5 really leaks (the secret
// is in what the kit captured: the output, a log record, a file in the replica's home) in a form the hunt
// used to miss, and that LEAK-LOG now names that form.
func TestLeakLogFindsSplitRecasedAndFiledSecrets(t *testing.T) {
	valuesOf := func(ev *Evidence, origin string) []string {
		var out []string
		for _, h := range ev.Histories {
			for _, s := range h.Secrets {
				if strings.HasPrefix(s.Origin, origin) {
					out = append(out, s.Value)
				}
			}
		}
		return out
	}
	mustFail := func(t *testing.T, ev *Evidence, want string) {
		t.Helper()
		fs := decideLeakLog(ev)
		for _, f := range fs {
			if strings.Contains(f.Message, want) {
				return
			}
		}
		t.Errorf("LEAK-LOG has no finding with %q: %+v", want, fs)
	}

	t.Run("split", func(t *testing.T) {
		recordedThenLive(t, "broken/leak-log-split", false, func(t *testing.T, j judged) {
			ev := j.ev
			tokens := valuesOf(ev, "workload identity token")
			leaked := 0
			for _, cs := range ev.calls() {
				out := cs.c.Stdout
				if !strings.Contains(out, "workload token for") {
					continue
				}
				joined := strings.Join(strings.Fields(out), "")
				for _, tok := range tokens {
					if strings.Contains(joined, tok) {
						leaked++
						if strings.Contains(out, tok) {
							t.Errorf("stdout holds the whole token on one line: %q", out)
						}
					}
				}
			}
			if leaked == 0 {
				t.Fatal("no captured stdout holds a workload token in pieces: the fixture does not leak")
			}
			mustFail(t, ev, "(raw, split across lines) to stdout")
		})
	})

	t.Run("upper", func(t *testing.T) {
		recordedThenLive(t, "broken/leak-log-upper", false, func(t *testing.T, j judged) {
			ev := j.ev
			var keys []string
			for _, v := range canaryValues(ev) {
				keys = append(keys, strings.ToUpper(v))
			}
			leaked := 0
			for _, cs := range ev.calls() {
				for _, l := range cs.c.Observations.Logs {
					for _, k := range keys {
						if strings.Contains(l.Message, k) {
							leaked++
						}
					}
				}
			}
			if leaked == 0 {
				t.Fatal("no log record holds an upper-cased canary: the fixture does not leak")
			}
			mustFail(t, ev, "secrets.model_api_key (case-changed) to a log record")
		})
	})

	t.Run("home dump", func(t *testing.T) {
		recordedThenLive(t, "broken/leak-log-home-dump", true, func(t *testing.T, j judged) {
			ev := j.ev
			tokens := valuesOf(ev, "workload identity token")
			leaked := 0
			for _, h := range ev.Histories {
				for _, f := range h.Files {
					if f.Path != ".cache/reference/last-session.json" || f.Place != "home" {
						continue
					}
					for _, tok := range tokens {
						if strings.Contains(string(f.Content()), tok) {
							leaked++
						}
					}
				}
			}
			if leaked == 0 {
				t.Fatal("no file in a replica's home holds a workload token: the fixture does not leak, or the kit did not read it")
			}
			mustFail(t, ev, "to a file in its home: .cache/reference/last-session.json")
		})
	})
}

// canaryValues are the configuration canaries the evidence hunts (the secrets whose origin is a
// configuration field).
func canaryValues(ev *Evidence) []string {
	var out []string
	for _, h := range ev.Histories {
		for _, s := range h.Secrets {
			if strings.HasPrefix(s.Value, CanaryPrefix) {
				out = append(out, s.Value)
			}
		}
	}
	return out
}
