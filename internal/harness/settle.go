package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// MethodSettle is the harness method that waits for the work earlier calls left running (see Settle).
const MethodSettle = "settle"

// settleMargin is how much longer than its own bound a settle call may take before it is cancelled: the
// harness answers on its event loop, which a provider may keep busy.
const settleMargin = 2 * time.Second

type settleArgs struct {
	Calls    []int64 `json:"calls"`
	TimeoutS float64 `json:"timeout_s"`
}

// Settle asks the harness to wait until the work that the calls with the given ids left running (threads and
// timers they started, asyncio tasks and loop timers they created, executor jobs they submitted, child
// processes they left; work started by that work counts too) has ended, at most wait. The reply carries the
// output made meanwhile (Stdout, Stderr); observations made meanwhile arrive as background observations
// (Background), each tagged with the call whose code made it. A process that dies meanwhile is an error, as
// for Call.
func (p *Process) Settle(ctx context.Context, calls []int64, wait time.Duration) (*Reply, *SettleResult, error) {
	if calls == nil {
		calls = []int64{}
	}
	rep, err := p.Call(ctx, MethodSettle, settleArgs{Calls: calls, TimeoutS: wait.Seconds()}, wait+settleMargin)
	if err != nil {
		return nil, nil, err
	}
	if !rep.OK {
		return rep, nil, fmt.Errorf("settle failed: %w", rep.Error)
	}
	var res SettleResult
	if err := json.Unmarshal(rep.Value, &res); err != nil {
		return rep, nil, fmt.Errorf("decode the settle reply: %w", err)
	}
	return rep, &res, nil
}

// WaitExit waits at most d for the process to end by itself (after a reply with Exit set) and reports whether
// it did.
func (p *Process) WaitExit(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.exited:
		return true
	case <-t.C:
		return false
	}
}
