package double

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// FaultKind says what a fault does to the requests it matches.
type FaultKind int

const (
	// Delay waits Fault.Duration before the request is applied.
	Delay FaultKind = iota + 1
	// Hold blocks the request until [Double.Release] of the fault or [Double.ReleaseAll], then applies it.
	Hold
	// Unavailable answers 503 {"error": "unavailable"} without applying the request.
	Unavailable
	// DropAfterApply applies the request, then closes the connection without answering.
	DropAfterApply
)

// kindOrder is every kind, in the order errors list them; kindNames are their names, the ones scenarios
// write (simulate's DoubleFault.Kind): the one place the double's fault kinds are named and told apart.
var (
	kindOrder = []FaultKind{Delay, Hold, Unavailable, DropAfterApply}
	kindNames = map[FaultKind]string{
		Delay:          "delay",
		Hold:           "hold",
		Unavailable:    "unavailable",
		DropAfterApply: "drop",
	}
)

// String returns the kind's name: delay, hold, unavailable or drop.
func (k FaultKind) String() string {
	if n, ok := kindNames[k]; ok {
		return n
	}
	return fmt.Sprintf("FaultKind(%d)", int(k))
}

// ParseFaultKind returns the kind a name denotes, exactly as String writes it (a scenario's double fault
// kind); an unknown name is an error that lists the kinds.
func ParseFaultKind(s string) (FaultKind, error) {
	names := make([]string, len(kindOrder))
	for i, k := range kindOrder {
		if kindNames[k] == s {
			return k, nil
		}
		names[i] = kindNames[k]
	}
	return 0, fmt.Errorf("double fault kind %q; use %s or %s", s, strings.Join(names[:len(names)-1], ", "), names[len(names)-1])
}

// FaultID identifies a fault added with [Double.AddFault]. IDs start at 1.
type FaultID int

// Fault describes requests to act on and what to do to them. Empty matcher fields match anything.
type Fault struct {
	// Method matches the request method, ignoring case (for example "PUT").
	Method string
	// PathPrefix matches requests whose path starts with it (for example "/v1/records/").
	PathPrefix string
	// Replica matches requests received on that replica's listener.
	Replica string
	// Operation matches requests whose X-Astrabox-Operation header equals it.
	Operation string
	// Kind is what the fault does.
	Kind FaultKind
	// Duration is the wait of a Delay fault.
	Duration time.Duration
	// Times is how many matching requests the fault affects; 0 means unlimited.
	Times int
	// WritesOnly matches only writes, whatever their path: PUT, POST and DELETE at the double's own
	// endpoints, and what a declared service counts as a write (see Request.Write).
	WritesOnly bool
	// Skip lets the first Skip matching requests through untouched; the fault acts from the next one on
	// (Skip 1 with Times 1 acts on the second write of a callback only).
	Skip int
}

// Validate reports a fault that could never act as meant: an unknown kind, a negative count or a Delay
// without a positive duration.
func (f Fault) Validate() error {
	if _, ok := kindNames[f.Kind]; !ok {
		return fmt.Errorf("fault kind %d is unknown: use Delay, Hold, Unavailable or DropAfterApply", int(f.Kind))
	}
	if f.Times < 0 {
		return fmt.Errorf("fault times %d is negative: use 0 for unlimited", f.Times)
	}
	if f.Skip < 0 {
		return fmt.Errorf("fault skip %d is negative: use 0 to act from the first match", f.Skip)
	}
	if f.Kind == Delay && f.Duration <= 0 {
		return fmt.Errorf("delay fault needs a positive duration, got %v", f.Duration)
	}
	return nil
}

type faultState struct {
	id      FaultID
	f       Fault
	used    int
	skipped int
	removed bool
}

func (fs *faultState) matches(r *Request) bool {
	f := fs.f
	if fs.removed || f.Validate() != nil || (f.Times > 0 && fs.used >= f.Times) {
		return false
	}
	return (f.Method == "" || strings.EqualFold(f.Method, r.Method)) &&
		(!f.WritesOnly || r.Write) &&
		strings.HasPrefix(r.Path, f.PathPrefix) &&
		(f.Replica == "" || f.Replica == r.Replica) &&
		(f.Operation == "" || f.Operation == r.Operation)
}

// AddFault adds a fault that acts on requests arriving from now on (faults are matched when a request
// arrives, before its body is read or its route checked) and returns its ID. A fault that fails
// [Fault.Validate] is kept but never matches; check Validate first.
//
// When several faults match one request, each is counted against its Times and they act in this order:
// every Delay, then every Hold (the request waits until any one of them is released), then Unavailable
// (nothing is applied), else the request is applied and DropAfterApply closes the connection.
func (d *Double) AddFault(f Fault) FaultID {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.nextFault++
	d.faults = append(d.faults, &faultState{id: d.nextFault, f: f})
	return d.nextFault
}

// RemoveFault stops the fault from matching later requests. Requests it already holds stay held until
// [Double.Release], [Double.ReleaseAll] or [Double.Close]. Removing an unknown fault does nothing.
func (d *Double) RemoveFault(id FaultID) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, fs := range d.faults {
		if fs.id == id {
			fs.removed = true
		}
	}
}

// matchFaults returns the faults matching req and counts the use. Called with mu held.
func (d *Double) matchFaults(req *Request) []*faultState {
	var out []*faultState
	for _, fs := range d.faults {
		if fs.matches(req) {
			if fs.skipped < fs.f.Skip {
				fs.skipped++
				continue
			}
			fs.used++
			out = append(out, fs)
		}
	}
	return out
}

type holdWait struct {
	req    *Request
	faults []FaultID
	ch     chan struct{}
}

// Release lets every request currently held by the fault proceed and returns how many it released. The
// fault keeps holding later matches unless it is removed or its Times is used up.
func (d *Double) Release(id FaultID) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for hw := range d.holds {
		for _, fid := range hw.faults {
			if fid == id {
				d.releaseLocked(hw)
				n++
				break
			}
		}
	}
	return n
}

// ReleaseAll lets every held request proceed and returns how many it released.
func (d *Double) ReleaseAll() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for hw := range d.holds {
		d.releaseLocked(hw)
		n++
	}
	return n
}

func (d *Double) releaseLocked(hw *holdWait) {
	close(hw.ch)
	delete(d.holds, hw)
	d.changedLocked()
}

// changedLocked wakes every waiter of WaitHeld and WaitRequests. Called with mu held.
func (d *Double) changedLocked() {
	close(d.changed)
	d.changed = make(chan struct{})
}

// Held returns how many requests are held right now.
func (d *Double) Held() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.holds)
}

// WaitHeld waits until at least n requests are held at once. It returns ctx's error if ctx ends first, or an
// error if the double is closed first.
func (d *Double) WaitHeld(ctx context.Context, n int) error {
	return d.waitFor(ctx, func() bool { return len(d.holds) >= n }, fmt.Sprintf("%d held requests", n))
}

// WaitRequests waits until at least n requests have arrived (been recorded). It returns ctx's error if ctx
// ends first, or an error if the double is closed first.
func (d *Double) WaitRequests(ctx context.Context, n int) error {
	return d.waitFor(ctx, func() bool { return len(d.requests) >= n }, fmt.Sprintf("%d requests", n))
}

// waitFor waits until cond (evaluated with mu held) is true.
func (d *Double) waitFor(ctx context.Context, cond func() bool, what string) error {
	for {
		d.mu.Lock()
		if cond() {
			d.mu.Unlock()
			return nil
		}
		if d.closed {
			d.mu.Unlock()
			return fmt.Errorf("deployment double closed while waiting for %s", what)
		}
		ch := d.changed
		d.mu.Unlock()
		select {
		case <-ch:
		case <-d.done:
		case <-ctx.Done():
			return fmt.Errorf("wait for %s: %w", what, ctx.Err())
		}
	}
}

// hold blocks req until one of its hold faults is released or the double closes. It reports false on close.
func (d *Double) hold(req *Request, faults []FaultID) bool {
	hw := &holdWait{req: req, faults: faults, ch: make(chan struct{})}
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return false
	}
	req.Held = true
	d.holds[hw] = struct{}{}
	d.changedLocked()
	d.mu.Unlock()
	select {
	case <-hw.ch:
		return true
	case <-d.done:
		d.mu.Lock()
		if _, ok := d.holds[hw]; ok {
			delete(d.holds, hw)
			d.changedLocked()
		}
		d.mu.Unlock()
		return false
	}
}

// delay waits dur unless the double closes first; it reports false on close.
func (d *Double) delay(dur time.Duration) bool {
	t := time.NewTimer(dur)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-d.done:
		return false
	}
}

// ReleaseNext lets the earliest-arrived held request proceed and returns its sequence number; ok is false when
// nothing is held. Releasing one at a time, waiting for each to finish, keeps the order in which held writes
// land deterministic.
func (d *Double) ReleaseNext() (seq int64, ok bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var first *holdWait
	for hw := range d.holds {
		if first == nil || hw.req.Seq < first.req.Seq {
			first = hw
		}
	}
	if first == nil {
		return 0, false
	}
	d.releaseLocked(first)
	return first.req.Seq, true
}
