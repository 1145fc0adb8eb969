package simulate

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
)

// ReplicaName is the name of the i-th replica (1-based): r1, r2, ...
func ReplicaName(i int) string { return fmt.Sprintf("r%d", i) }

// ParseReplica reads a replica name back to its 1-based number; ok is false for anything that is not exactly
// what ReplicaName makes (r0, r01, x1).
func ParseReplica(name string) (i int, ok bool) {
	digits, found := strings.CutPrefix(name, "r")
	if !found {
		return 0, false
	}
	i, err := strconv.Atoi(digits)
	if err != nil || i < 1 || ReplicaName(i) != name {
		return 0, false
	}
	return i, true
}

// startReplicas starts every replica process at once and records them, in replica order, once all are up.
func (p *platform) startReplicas() error { return p.startReplicasOf(p.replicas) }

// unstarted are the scenario's replicas without a process: those a stage smaller than the scenario lacked.
func (p *platform) unstarted() []*replica {
	var out []*replica
	for _, r := range p.replicas {
		if r.proc == nil {
			out = append(out, r)
		}
	}
	return out
}

// startReplicasOf starts the processes of the given replicas at once and, once all are up, records every
// replica of the scenario as started, in replica order.
func (p *platform) startReplicasOf(replicas []*replica) error {
	errs := make([]error, len(replicas))
	var wg sync.WaitGroup
	for i, r := range replicas {
		wg.Add(1)
		go func(i int, r *replica) {
			defer wg.Done()
			errs[i] = p.startReplica(r)
		}(i, r)
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	// Recorded in replica order once all are up, so that histories do not depend on which started first.
	for _, r := range p.replicas {
		p.started(r)
	}
	return nil
}

// FoldReplica is the name of replica i (1-based) when there are only n replicas: they are taken round, so
// r3 of two replicas is r1 (n below 1 counts as 1).
func FoldReplica(i, n int) string {
	if n < 1 {
		n = 1
	}
	return ReplicaName((i-1)%n + 1)
}
