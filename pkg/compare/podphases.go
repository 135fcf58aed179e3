package compare

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"golang.org/x/sync/errgroup"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodeagent-io/nodeagent/pkg/model"
)

// PodPhases is where in its sync cycle each pod is when a phase's window
// opens.
type PodPhases int

const (
	// PhasesMixed: each pod's syncs are out of step with its node's other
	// pods, as on a node that has run a while, whose pods started at
	// different times. What the model's steady state assumes, and what
	// `nodeagent analyze` predicts for a live cluster.
	PhasesMixed PodPhases = iota
	// PhasesTogether: every pod of a node syncs first when its agent
	// starts, as right after a kubelet restart; the pods that share an
	// object share more of its GETs until the sync jitter pulls them
	// apart, which at S = 1 m takes longer than any window.
	PhasesTogether
)

var podPhasesNames = map[PodPhases]string{PhasesMixed: "mixed", PhasesTogether: "together"}

func (p PodPhases) String() string { return podPhasesNames[p] }

// ParsePodPhases reads a --pod-phases value.
func ParsePodPhases(s string) (PodPhases, error) {
	for p, name := range podPhasesNames {
		if s == name {
			return p, nil
		}
	}
	return 0, fmt.Errorf("--pod-phases %q: want mixed or together", s)
}

// phaseAnnotation is the annotation whose update makes a pod's agent or
// kubelet sync it at once and count its next periodic sync from there.
const phaseAnnotation = "nodeagent.io/compare-phase"

// mixingConcurrency bounds the updates in flight, so that a slow
// apiserver delays a few of them rather than the whole schedule.
const mixingConcurrency = 16

// phaseUpdate is one pod's update, at offset from the start of mixing.
type phaseUpdate struct {
	pod    string
	offset time.Duration
}

// mixingSchedule gives every pod of nodes one update at a uniform random
// offset in [0, over), in the order they fall due. A pod updated at u
// syncs at u, then every S·(1 + U[0, 0.5)) on its node's tick: after one
// mean sync interval the pods' phases are independent of each other and
// of their agent's start, as the model takes them.
func mixingSchedule(nodes []model.Node, over time.Duration, rng *rand.Rand) []phaseUpdate {
	var updates []phaseUpdate
	for _, n := range nodes {
		for _, p := range n.Pods {
			updates = append(updates, phaseUpdate{pod: p.Name, offset: time.Duration(rng.Int64N(int64(over)))})
		}
	}
	slices.SortFunc(updates, func(a, b phaseUpdate) int { return int(a.offset - b.offset) })
	return updates
}

// mixPodPhases updates every pod of the run once, at the times of
// mixingSchedule over one mean sync interval, and returns when the last
// update is done. The update sets an annotation, which the agents and the
// kubelet both treat as a change of the pod (a sync now), to a value of
// its own per phase.
func (r *runner) mixPodPhases(ctx context.Context, mode Mode) error {
	over := model.MeanSyncInterval(r.scenario.SyncFrequency)
	now := time.Now()
	schedule := mixingSchedule(r.nodes, over, rand.New(rand.NewPCG(uint64(now.UnixNano()), 0)))
	tag := fmt.Sprintf("%s-%d", mode, now.Unix())
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, phaseAnnotation, tag)
	pods := r.admin.CoreV1().Pods(r.namespace)
	start := now
	g, patchCtx := errgroup.WithContext(ctx)
	g.SetLimit(mixingConcurrency)
	for i, u := range schedule {
		if err := sleepUntil(patchCtx, start.Add(u.offset)); err != nil {
			break
		}
		r.progress.status("%-19s mixing   %5.0fs/%.0fs  pods updated %d/%d (each syncs now, out of step with its node's others)",
			mode, time.Since(start).Seconds(), over.Seconds(), i, len(schedule))
		g.Go(func() error {
			if _, err := pods.Patch(patchCtx, u.pod, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
				return fmt.Errorf("updating pod %s to mix the pods' sync phases: %w", u.pod, err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	r.progress.done("%-19s mixing done in %.1fs: each of %d pods synced once at a random time in one mean sync interval", mode, time.Since(start).Seconds(), len(schedule))
	return nil
}

// sleepUntil waits until t or ctx's end.
func sleepUntil(ctx context.Context, t time.Time) error {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}
