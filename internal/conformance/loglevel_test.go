package conformance

import (
	"strings"
	"testing"

	"github.com/astrabox-dev/astrabox/internal/harness"
	"github.com/astrabox-dev/astrabox/internal/simulate"
)

// TestLogRecordsBelowTheDeploymentLevelAreWarnings: botocore logs response bodies at DEBUG and a deployment
// at INFO never emits them, so a secret there is a warning naming the logger and the line that quiets it;
// the same secret at INFO, or at any level at or above a configured DEBUG, still fails. Trusted
// configuration in a DEBUG record (SYNC-NO-LOG-CONFIG) is judged the same way.
func TestLogRecordsBelowTheDeploymentLevelAreWarnings(t *testing.T) {
	const trusted = "You are the Acme release assistant."
	build := func(level int) *Evidence {
		b := newHist("x")
		b.call(&simulate.CallRecord{Replica: "r1", Method: "prepare_session", Outcome: simulate.OutcomeReturned,
			Observations: harness.Observations{Logs: []harness.LogRecord{
				{Level: "DEBUG", LevelNo: 10, Logger: "botocore.parsers", Message: `Response body: {"SecretString": "` + testTokenA + `"} ` + trusted, File: "/usr/lib/python3/dist-packages/botocore/parsers.py", Line: 241},
				{Level: "INFO", LevelNo: 20, Logger: "acme.aws", Message: "key " + testTokenB, File: "/p/provider.py", Line: 30},
			}}})
		ev := leakEvidence(b.h)
		ev.Config = map[string]any{"agent": map[string]any{"instructions": trusted}}
		ev.TrustedStrings = []string{trusted}
		ev.LogLevel = level
		return ev
	}
	fs := decideLeakLog(build(LogLevelInfo))
	if len(fs) != 2 {
		t.Fatalf("findings = %+v", fs)
	}
	debug, info := fs[0], fs[1]
	if !debug.Warning || info.Warning {
		t.Fatalf("DEBUG must warn and INFO fail: %+v", fs)
	}
	for _, w := range []string{`logger "botocore"`, `logging.getLogger("botocore").setLevel(logging.INFO)`, "below the deployment's log level INFO"} {
		if !strings.Contains(debug.Message, w) {
			t.Errorf("warning lacks %q: %s", w, debug.Message)
		}
	}
	cfg := decideSyncNoLogConfig(build(LogLevelInfo))
	if len(cfg) != 1 || !cfg[0].Warning || !strings.Contains(cfg[0].Message, `logging.getLogger("botocore")`) {
		t.Fatalf("SYNC-NO-LOG-CONFIG findings = %+v", cfg)
	}
	for _, f := range decideLeakLog(build(LogLevelDebug)) {
		if f.Warning {
			t.Fatalf("at log-level DEBUG every record fails: %+v", f)
		}
	}
	if cfg := decideSyncNoLogConfig(build(LogLevelDebug)); len(cfg) != 1 || cfg[0].Warning {
		t.Fatalf("at log-level DEBUG: %+v", cfg)
	}
}
