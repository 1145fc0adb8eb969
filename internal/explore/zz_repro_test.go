package explore

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/astrabox-dev/astrabox/internal/conformance"
	"github.com/astrabox-dev/astrabox/internal/simulate"
)

const zzYAML = `name: zz
replicas: 1
steps:
  - {op: cold_start, session: s1, agent: agent-1, principal: alice}
  - op: turn
    session: s1
    attempt: t1
    fault: {kind: cancel, on: request, after: 0.05}
    double: [{kind: delay, delay: 0.03}]
  - {op: turn, session: s1, attempt: t2}
`

func TestZZRepro(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("ZZ_N"))
	sc, err := simulate.ParseScenario("zz.yaml", []byte(zzYAML))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	env, w := setup(t, filepath.Join("..", "..", "testdata", "providers", "correct", "requests_client"), 11)
	for i := 0; i < n; i++ {
		h, err := w.Run(ctx, clone(sc))
		if err != nil {
			t.Fatal(err)
		}
		c := h.CallsOf("prepare_turn")[0]
		ids, _ := conformance.Failing(env.Evidence([]*simulate.History{h}), nil, nil, nil)
		t.Logf("run %d: outcome=%s cancelSent=%v dur=%v failing=%v", i, c.Outcome, c.CancelSent, time.Duration(c.DurationNS), ids)
	}
}
