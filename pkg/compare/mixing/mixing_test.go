package mixing

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/nodeagent-io/nodeagent/pkg/model"
)

const (
	playedS      = 60 * time.Second
	playedWindow = 180.0 // seconds
	playedBucket = 6.0   // seconds
)

// playOut plays a schedule of updates out with the model's sync
// intervals, and counts the pods' syncs in the window's buckets: from
// each pod's last update on, one sync an interval after the other. It
// fails the test if an update's periodic sync would come before the pod's
// next update (which would add a sync the schedule did not plan).
func playOut(t *testing.T, schedule []Update, rng *rand.Rand) (pods int, buckets []int) {
	last := map[string]float64{}
	for _, u := range schedule {
		last[u.Pod] = u.Offset.Seconds()
	}
	S := playedS.Seconds()
	interval := func() float64 { return S*(1+0.5*rng.Float64()) + rng.Float64() }
	buckets = make([]int, int(playedWindow/playedBucket))
	for _, u := range schedule {
		if at := u.Offset.Seconds(); at < last[u.Pod] {
			if at+S < last[u.Pod] {
				t.Errorf("pod %s: update at %.1fs, periodic sync from %.1fs, before its next update at %.1fs", u.Pod, at, at+S, last[u.Pod])
			}
			continue
		}
		for at := u.Offset.Seconds(); at < playedWindow; at += interval() {
			if at >= 0 {
				buckets[int(at/playedBucket)]++
			}
		}
	}
	return len(last), buckets
}

// The schedule's point: from the window's start, each pod's first sync
// comes after a wait with the equilibrium density P(X > r)/E[X], so that
// the pods sync as often in the window's first seconds as in its last,
// and no update falls in the window. The obvious schedule, one update at
// a uniform time within one mean interval before the window, fails that.
func TestMixingScheduleGivesTheSteadyState(t *testing.T) {
	nodes := make([]model.Node, 1000)
	for n := range nodes {
		for p := range 100 {
			nodes[n].Pods = append(nodes[n].Pods, model.Pod{Name: fmt.Sprintf("pod-%03d-%03d", n, p)})
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	mean, _ := model.SyncIntervalMoments(playedS)
	schedule := Schedule(nodes, playedS, rng)
	for i, u := range schedule {
		if i > 0 && u.Offset < schedule[i-1].Offset {
			t.Fatalf("update %d at %s before update %d at %s: not in the order due", i, u.Offset, i-1, schedule[i-1].Offset)
		}
		if u.Offset < -2*playedS || u.Offset >= 0 {
			t.Errorf("pod %s updated at %s, outside the 2·S before the window", u.Pod, u.Offset)
		}
	}
	pods, buckets := playOut(t, schedule, rng)
	if pods != 100000 {
		t.Fatalf("%d pods updated, want all 100000", pods)
	}
	steady := float64(pods) * playedBucket / mean
	total := 0
	for i, n := range buckets {
		total += n
		if math.Abs(float64(n)/steady-1) > 0.06 {
			t.Errorf("%d syncs in [%gs, %gs), the steady state's %.0f: want within 6 %%", n, playedBucket*float64(i), playedBucket*float64(i+1), steady)
		}
	}
	if want := steady * float64(len(buckets)); math.Abs(float64(total)/want-1) > 0.01 {
		t.Errorf("%d syncs in the window, the steady state's %.0f: want within 1 %%", total, want)
	}

	var uniform []Update
	for _, n := range nodes {
		for _, p := range n.Pods {
			uniform = append(uniform, Update{Pod: p.Name, Offset: -time.Duration(rng.Float64() * mean * float64(time.Second))})
		}
	}
	_, buckets = playOut(t, uniform, rng)
	if first := float64(buckets[0]) / steady; first > 0.8 {
		t.Errorf("the uniform schedule gives %.2f of the steady state's syncs in the first %gs; the test cannot tell it from a good one", first, playedBucket)
	} else {
		t.Logf("the uniform schedule: %.2f of the steady state's syncs in the window's first %gs", first, playedBucket)
	}
}
