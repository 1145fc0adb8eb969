package explore

import (
	"math/rand"
	"testing"
)

// TestNoGeneratedScenarioHasFewerReplicasThanAStage: exploration's stages hold fewestGeneratedReplicas
// replicas, sized so that no replica forked ahead goes unused; a generated, guided or varied scenario with
// fewer would leave a staged replica idle every time. (Shrinking and replays may use fewer: they are rare.)
func TestNoGeneratedScenarioHasFewerReplicasThanAStage(t *testing.T) {
	counts := map[int]int{}
	for i := 0; i < 500; i++ {
		for _, sc := range []struct {
			name     string
			replicas int
		}{
			{"generated", Generate(7, i).Replicas},
			{"guided", generate(7, i, nil, map[string]bool{}).Replicas},
		} {
			if sc.replicas < fewestGeneratedReplicas {
				t.Fatalf("%s scenario %d has %d replicas, fewer than a stage's %d", sc.name, i, sc.replicas, fewestGeneratedReplicas)
			}
			counts[sc.replicas]++
		}
		v := Generate(7, i)
		changeReplicas(rand.New(rand.NewSource(int64(i))), v)
		if v.Replicas < fewestGeneratedReplicas {
			t.Fatalf("a varied scenario has %d replicas, fewer than a stage's %d", v.Replicas, fewestGeneratedReplicas)
		}
	}
	if counts[fewestGeneratedReplicas] == 0 {
		t.Errorf("no generated scenario has %d replicas: stages of that size would always be topped up (%v)", fewestGeneratedReplicas, counts)
	}
}
