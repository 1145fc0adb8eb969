package simulate

import "github.com/astrabox-dev/astrabox/internal/harness"

// ReplicaCoverage is what a replica's provider code ran outside any call record: while the platform waited
// for work a callback left running (the settle call's reply carries it, attributed to that callback).
type ReplicaCoverage struct {
	Replica string
	Report  *harness.CoverageReport
}

// keepCoverage records a settle reply's coverage in the history.
func (p *platform) keepCoverage(replica string, rep *harness.Reply) {
	if rep == nil || rep.Coverage == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.hist.Coverage = append(p.hist.Coverage, ReplicaCoverage{Replica: replica, Report: rep.Coverage})
}
