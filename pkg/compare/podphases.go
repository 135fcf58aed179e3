package compare

import (
	"context"
	"errors"
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
	// apart, in about six sync intervals (8 minutes at S = 1 m).
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

// phaseUpdate is one update of a pod, at offset from the window's start.
type phaseUpdate struct {
	pod    string
	offset time.Duration
}

// mixingSchedule updates each pod of nodes once or twice in the 2·S
// before the window opens, so that from S before the window each pod's
// syncs form the stationary renewal process that the model takes, and
// stay so: the first sync after that point z comes after a wait R with
// the equilibrium density P(X > r)/E[X], X the interval between two
// syncs, S·(1 + U[0, 0.5)) + U[0, 1) s, and every later one an interval
// after the one before. An update makes the pod sync at once and counts
// its next periodic sync from there, so:
//
//   - with probability (S/2)/E[X] the pod is updated once, a U[0, S/2)
//     before z: its first sync after z is that update plus one interval,
//     and these pods supply the whole of the density above S, falling to
//     zero at 1.5·S + 1 s, and part of it below S;
//   - otherwise it is updated at z + R, R drawn from what the first group
//     leaves of the density below S, and once before z, late enough that
//     its periodic sync comes after z + R (an update at u is followed by a
//     sync no sooner than u + S).
//
// The updates after z sync a pod off the sync loop's 1 s ticks, where
// the pods due in one tick share a GET of an object they all read; they
// end one S before the window, which then holds only periodic syncs.
func mixingSchedule(nodes []model.Node, syncFrequency time.Duration, rng *rand.Rand) []phaseUpdate {
	S := syncFrequency.Seconds()
	mean, _ := model.SyncIntervalMoments(syncFrequency)
	fromWindow := func(x float64) time.Duration { return time.Duration((x - S) * float64(time.Second)) }
	var updates []phaseUpdate
	for _, n := range nodes {
		for _, p := range n.Pods {
			if rng.Float64() < (S/2)/mean {
				updates = append(updates, phaseUpdate{pod: p.Name, offset: fromWindow(-rng.Float64() * S / 2)})
				continue
			}
			r := waitAfterZ(S, rng)
			// Before z, after r − S, with a margin for the update's own
			// delivery.
			before := r - S + (S-r)*(0.25+0.75*rng.Float64())
			updates = append(updates, phaseUpdate{pod: p.Name, offset: fromWindow(before)}, phaseUpdate{pod: p.Name, offset: fromWindow(r)})
		}
	}
	slices.SortFunc(updates, func(a, b phaseUpdate) int { return int(a.offset - b.offset) })
	return updates
}

// waitAfterZ draws the wait r in [0, S) to an update after z, by
// rejection: r uniform, kept with probability one minus the density that
// the pods updated once before z already give r, in units of 1/E[X].
// Those pods' first sync comes at S + V − a + w, with V and a uniform on
// [0, S/2) and w on [0, 1): V − a has the triangular density
// (1 − |y|/(S/2))/(S/2), and averaged over w, at r below S, it is
// (2/S)·(d·m − m²/2) with d = r − S/2 and m = min(1, d), where d > 0.
func waitAfterZ(S float64, rng *rand.Rand) float64 {
	for {
		r := rng.Float64() * S
		given := 0.0
		if d := r - S/2; d > 0 {
			m := min(1, d)
			given = (2 / S) * (d*m - m*m/2)
		}
		if rng.Float64() < 1-given {
			return r
		}
	}
}

// mixPodPhases applies mixingSchedule, with the window opening at start,
// 2·S from now, and returns at start. Each update sets an annotation,
// which the agents and the kubelet both treat as a change of the pod (a
// sync now), to a value of its own: a patch that sets the value the pod
// already has changes nothing, and nothing syncs.
func (r *runner) mixPodPhases(ctx context.Context, mode Mode, start time.Time) error {
	schedule := mixingSchedule(r.nodes, r.scenario.SyncFrequency, rand.New(rand.NewPCG(uint64(start.UnixNano()), 0)))
	tag := fmt.Sprintf("%s-%d", mode, start.Unix())
	pods := r.admin.CoreV1().Pods(r.namespace)
	g, patchCtx := errgroup.WithContext(ctx)
	g.SetLimit(mixingConcurrency)
	began := time.Now()
	for i, u := range schedule {
		if sleepUntil(patchCtx, start.Add(u.offset)) != nil {
			break
		}
		r.progress.Status("%-19s mixing   %5.0fs left  pods updated %d/%d (each syncs at once)", mode, time.Until(start).Seconds(), i, len(schedule))
		patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:"%s-%d"}}}`, phaseAnnotation, tag, i)
		g.Go(func() error {
			if _, err := pods.Patch(patchCtx, u.pod, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
				return fmt.Errorf("updating pod %s to mix the pods' sync phases: %w", u.pod, err)
			}
			return nil
		})
	}
	if err := errors.Join(g.Wait(), ctx.Err()); err != nil {
		return err
	}
	if err := sleepUntil(ctx, start); err != nil {
		return err
	}
	r.progress.Done("%-19s mixing done in %.0fs: %d pod updates, so that each pod syncs out of step with its node's others", mode, time.Since(began).Seconds(), len(schedule))
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
