package simulate

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/astrabox-dev/astrabox/internal/double"
	"github.com/astrabox-dev/astrabox/internal/harness"
)

// pendingWork is a call whose leftover work (threads, timers, tasks, executor jobs, children) has not ended.
type pendingWork struct {
	id     int64 // the harness's call id
	key    string
	method string
}

// settleWindow is a stretch of double requests (arrival numbers after from, up to to) from one replica that
// arrived while the platform waited for the leftover work of call key.
type settleWindow struct {
	replica  string
	from, to int64
	key      string
}

// windowOf returns the call whose leftover work was being waited for when request seq of replica arrived.
func (p *platform) windowOf(replica string, seq int64) string {
	for _, w := range p.windows {
		if w.replica == replica && seq > w.from && seq <= w.to {
			return w.key
		}
	}
	return ""
}

// settleAfter waits, after a callback that left work running, until that work has ended or the settle time
// has passed. Requests that reach the double meanwhile are attributed to the call (as its background
// work), and what the work logged, warned, audited and printed is recorded as background observations of
// that call.
func (p *platform) settleAfter(r *replica, rec *CallRecord, id int64) {
	if r.proc == nil || !r.proc.Alive() || rec.Observations.Leftovers.Empty() {
		return
	}
	w := pendingWork{id: id, key: rec.Key, method: string(rec.Method)}
	if !p.settle(r, []pendingWork{w}, p.o.Settle) {
		r.unsettled = append(r.unsettled, w)
	}
}

// settleEnd waits, at the end of the scenario, for the work still running on every replica (bounded by the
// settle time), and collects the output and observations every replica made after its last call.
func (p *platform) settleEnd() {
	for _, r := range p.replicas {
		if r.proc == nil || !r.proc.Alive() {
			continue
		}
		wait := p.o.Settle
		if len(r.unsettled) == 0 {
			wait = 0 // nothing is known to run: only collect what was written since the last call
		}
		p.settle(r, r.unsettled, wait)
		r.unsettled = nil
	}
}

// settle runs one settle call on a replica for the given calls' work and records what happened meanwhile.
// It reports whether that work ended.
func (p *platform) settle(r *replica, work []pendingWork, wait time.Duration) bool {
	ids := make([]int64, 0, len(work))
	origin := ""
	for _, w := range work {
		ids = append(ids, w.id)
	}
	if len(work) == 1 {
		origin = work[0].key
		p.dbl.SetInFlight(r.name, double.Call{Callback: work[0].method, CallID: work[0].key, Step: fmt.Sprintf("%d:%s", p.step, p.stepOp)})
	}
	from := int64(p.dbl.RequestCount())
	rep, res, err := r.proc.Settle(p.ctx, ids, wait)
	p.keepCoverage(r.name, rep)
	if len(work) == 1 {
		p.dbl.ClearInFlight(r.name)
		p.mu.Lock()
		p.windows = append(p.windows, settleWindow{replica: r.name, from: from, to: int64(p.dbl.RequestCount()), key: origin})
		p.mu.Unlock()
	}
	bg := r.proc.Background()
	p.takeConns(r.name, r.proc.PID(), &bg)
	ev := &Event{Kind: EventBackground, Replica: r.name, Origin: origin}
	if rep != nil {
		ev.Stdout, ev.Stderr = p.stableText(rep.Stdout.String()), p.stableText(rep.Stderr.String())
	}
	settled := err == nil && res != nil && res.Settled
	if !bg.Empty() || ev.Stdout != "" || ev.Stderr != "" {
		p.stableObservations(&bg)
		ev.Background = &bg
		ev.Message = "observations and output of work left running"
		if origin != "" {
			ev.Message += " by " + origin
		}
		p.event(ev)
	}
	if err != nil {
		p.event(&Event{Kind: EventPlatform, Replica: r.name, Origin: origin, Message: "waiting for work left running failed: " + p.stableText(err.Error())})
	} else if res != nil && !res.Settled && len(work) > 0 && onlyChildren(res.Remaining) {
		p.noteChildWait(r, work, res)
	} else if res != nil && !res.Settled && len(work) > 0 {
		p.event(&Event{Kind: EventPlatform, Replica: r.name, Origin: origin,
			Message: fmt.Sprintf("work left running by %s was still running after %s: %s", keysOf(work), wait, describeLeftovers(res.Remaining))})
	}
	return settled
}

// onlyChildren reports leftovers that are child processes and nothing else.
func onlyChildren(l harness.Leftovers) bool {
	return len(l.Children) > 0 && len(l.Threads) == 0 && len(l.Tasks) == 0 && len(l.Timers) == 0
}

// noteChildWait records a settle that waited for child processes alone (ChildWait), and tells it in the
// timeline: which calls left them, their command lines, and whether the harness stopped waiting because
// they were idle.
func (p *platform) noteChildWait(r *replica, work []pendingWork, res *harness.SettleResult) {
	cw := ChildWait{Replica: r.name, Children: res.Remaining.Children, Waited: time.Duration(res.WaitedS * float64(time.Second))}
	seen := map[string]bool{}
	for _, w := range work {
		cw.Calls = append(cw.Calls, w.key)
		if !seen[w.method] {
			seen[w.method] = true
			cw.Methods = append(cw.Methods, w.method)
		}
	}
	p.mu.Lock()
	p.hist.ChildWaits = append(p.hist.ChildWaits, cw)
	p.mu.Unlock()
	idle := true
	cmds := make([]string, 0, len(cw.Children))
	for _, c := range cw.Children {
		idle = idle && c.Idle
		cmds = append(cmds, "`"+c.Cmdline+"`")
	}
	how := "were still running at the settle bound"
	if idle {
		how = fmt.Sprintf("were idle (asleep, no CPU, no child or socket) for %s, so the platform stopped waiting for them", harness.ChildIdleWindow)
	}
	p.event(&Event{Kind: EventPlatform, Replica: r.name, Origin: cw.Calls[0],
		Message: fmt.Sprintf("child process(es) left running by %s %s: %s", keysOf(work), how, strings.Join(cmds, ", "))})
}

func keysOf(work []pendingWork) string {
	keys := make([]string, 0, len(work))
	for _, w := range work {
		keys = append(keys, w.key)
	}
	sort.Strings(keys)
	return fmt.Sprint(keys)
}

// describeLeftovers is a short, stable description of work still running.
func describeLeftovers(l harness.Leftovers) string {
	return fmt.Sprintf("%d thread(s), %d task(s), %d timer(s), %d child process(es)", len(l.Threads), len(l.Tasks), len(l.Timers), len(l.Children))
}
