package simulate

import (
	"fmt"
	"strconv"
	"strings"
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
