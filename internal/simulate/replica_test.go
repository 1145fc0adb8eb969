package simulate

import "testing"

func TestReplicaNamesRoundTrip(t *testing.T) {
	for i := 1; i <= 12; i++ {
		got, ok := ParseReplica(ReplicaName(i))
		if !ok || got != i {
			t.Errorf("ParseReplica(ReplicaName(%d)) = %d, %v", i, got, ok)
		}
	}
	for _, bad := range []string{"", "r", "r0", "r01", "r-1", "x1", "R1", "r1 ", "r+1"} {
		if i, ok := ParseReplica(bad); ok {
			t.Errorf("ParseReplica(%q) = %d, want not ok", bad, i)
		}
	}
	if replicaIndex("r3", 2) != -1 || replicaIndex("r2", 2) != 1 {
		t.Errorf("replicaIndex disagrees with ParseReplica")
	}
}
