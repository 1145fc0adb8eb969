package simulate

import "time"

// Clock is the platform's virtual host clock. Deadlines of validity periods and operation leases are measured
// on it, so no test waits wall-clock time for a validity period. It only moves when the platform advances it.
type Clock struct {
	epoch time.Time
	now   time.Duration
}

// NewClock returns a clock that starts at epoch.
func NewClock(epoch time.Time) *Clock { return &Clock{epoch: epoch} }

// Now is the current host time.
func (c *Clock) Now() time.Time { return c.epoch.Add(c.now) }

// Elapsed is the host time since the scenario started.
func (c *Clock) Elapsed() time.Duration { return c.now }

// Advance moves the clock forward.
func (c *Clock) Advance(d time.Duration) {
	if d > 0 {
		c.now += d
	}
}
