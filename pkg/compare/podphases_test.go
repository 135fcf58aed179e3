package compare

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/nodeagent-io/nodeagent/pkg/model"
)

// The schedule's point: from the window's start, each pod's first sync
// comes after a wait with the equilibrium density P(X > r)/E[X], so that
// the pods sync as often in the window's first seconds as in its last,
// and no update falls in the window.
// Here the syncs that follow the schedule are played out with the model's
// intervals, and the window's syncs counted by tenths of one S.
func TestMixingScheduleGivesTheSteadyState(t *testing.T) {
	const S = 60 * time.Second
	nodes := layout(Scenario{Nodes: 1000, PodsPerNode: 100, ConfigMapsPerPod: 1}, "ns")
	rng := rand.New(rand.NewPCG(1, 2))
	schedule := mixingSchedule(nodes, S, rng)
	last := map[string]float64{} // each pod's last update
	updates := map[string]int{}
	for i, u := range schedule {
		if i > 0 && u.offset < schedule[i-1].offset {
			t.Fatalf("update %d at %s before update %d at %s: not in the order due", i, u.offset, i-1, schedule[i-1].offset)
		}
		if u.offset < -2*S || u.offset >= 0 {
			t.Errorf("pod %s updated at %s, outside the 2·S before the window", u.pod, u.offset)
		}
		last[u.pod] = u.offset.Seconds()
		updates[u.pod]++
	}
	pods := len(updates)
	if pods != 100000 {
		t.Fatalf("%d pods updated, want all 100000", pods)
	}
	mean, _ := model.SyncIntervalMoments(S)
	interval := func() float64 { return S.Seconds()*(1+0.5*rng.Float64()) + rng.Float64() }
	// Each pod's syncs from its last update on; an earlier update's
	// periodic sync must not come before its next update.
	const window = 180.0
	var tenths [30]int // tenths of S over the three minutes
	total := 0
	for _, u := range schedule {
		if u.offset.Seconds() < last[u.pod] {
			// An update before the start that another follows: its
			// periodic sync comes no sooner than S later.
			if next := u.offset.Seconds() + S.Seconds(); next < last[u.pod] {
				t.Errorf("pod %s: update at %s, periodic sync from %.1fs, before its next update at %.1fs", u.pod, u.offset, next, last[u.pod])
			}
			continue
		}
		for at := u.offset.Seconds(); at < window; at += interval() {
			if at >= 0 {
				tenths[int(at/6)]++
				total++
			}
		}
	}
	want := float64(pods) * window / mean
	if math.Abs(float64(total)/want-1) > 0.01 {
		t.Errorf("%d syncs in the window, the steady state's %.0f: want within 1 %%", total, want)
	}
	for i, n := range tenths {
		if w := float64(pods) * 6 / mean; math.Abs(float64(n)/w-1) > 0.06 {
			t.Errorf("%d syncs in [%ds, %ds), the steady state's %.0f: want within 6 %%", n, 6*i, 6*(i+1), w)
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
