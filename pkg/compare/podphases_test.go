package compare

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/nodeagent-io/nodeagent/pkg/model"
)

func TestMixingScheduleUpdatesEveryPodOnceWithinTheInterval(t *testing.T) {
	nodes := layout(Scenario{Nodes: 20, PodsPerNode: 30, ConfigMapsPerPod: 1}, "ns")
	over := model.MeanSyncInterval(time.Minute)
	schedule := mixingSchedule(nodes, over, rand.New(rand.NewPCG(1, 2)))
	if len(schedule) != 600 {
		t.Fatalf("%d updates, want one per pod (600)", len(schedule))
	}
	seen := map[string]bool{}
	// Fifths of the interval: each should hold about a fifth of the pods,
	// or the phases are not spread.
	var fifths [5]int
	for i, u := range schedule {
		if seen[u.pod] {
			t.Errorf("pod %s updated twice", u.pod)
		}
		seen[u.pod] = true
		if u.offset < 0 || u.offset >= over {
			t.Errorf("pod %s at %s, outside [0, %s)", u.pod, u.offset, over)
		}
		if i > 0 && u.offset < schedule[i-1].offset {
			t.Errorf("update %d at %s before update %d at %s: not in the order due", i, u.offset, i-1, schedule[i-1].offset)
		}
		fifths[int(5*u.offset/over)]++
	}
	for i, n := range fifths {
		if n < 90 || n > 150 {
			t.Errorf("fifth %d of the interval holds %d of 600 updates, want about 120: %v", i, n, fifths)
		}
	}
}

func TestParsePodPhases(t *testing.T) {
	for _, p := range []PodPhases{PhasesMixed, PhasesTogether} {
		got, err := ParsePodPhases(p.String())
		if err != nil || got != p {
			t.Errorf("ParsePodPhases(%q) = %v, %v", p.String(), got, err)
		}
	}
	if _, err := ParsePodPhases("random"); err == nil {
		t.Error("ParsePodPhases(random) succeeded")
	}
}
