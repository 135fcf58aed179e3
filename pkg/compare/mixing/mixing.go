// Package mixing puts the pods of a comparison's nodes out of step before a
// window opens: an agent or kubelet syncs every pod of its node at its
// start, and the pods keep nearly those phases for several sync intervals,
// while the load model is of a node whose pods started at different times
// (docs/model.md, "Right after a start"). Updating each pod once or twice
// on the schedule below makes each pod's syncs the steady state's.
package mixing

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/nodeagent-io/nodeagent/pkg/model"
	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/types"
)

// Annotation is the annotation whose update makes a pod's agent or
// kubelet sync it at once and count its next periodic sync from there.
const Annotation = "nodeagent.io/compare-phase"

// concurrency bounds the updates in flight, so that a slow
// apiserver delays a few of them rather than the whole schedule.
const concurrency = 16

// Update is one update of a pod, at offset from the window's start.
type Update struct {
	Pod    string
	Offset time.Duration
}

// Schedule updates each pod of nodes once or twice in the 2·S
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
func Schedule(nodes []model.Node, syncFrequency time.Duration, rng *rand.Rand) []Update {
	S := syncFrequency.Seconds()
	mean, _ := model.SyncIntervalMoments(syncFrequency)
	fromWindow := func(x float64) time.Duration { return time.Duration((x - S) * float64(time.Second)) }
	var updates []Update
	for _, n := range nodes {
		for _, p := range n.Pods {
			if rng.Float64() < (S/2)/mean {
				updates = append(updates, Update{Pod: p.Name, Offset: fromWindow(-rng.Float64() * S / 2)})
				continue
			}
			r := waitAfterZ(S, rng)
			// Before z, after r − S, with a margin for the update's own
			// delivery.
			before := r - S + (S-r)*(0.25+0.75*rng.Float64())
			updates = append(updates, Update{Pod: p.Name, Offset: fromWindow(before)}, Update{Pod: p.Name, Offset: fromWindow(r)})
		}
	}
	slices.SortFunc(updates, func(a, b Update) int { return int(a.Offset - b.Offset) })
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

// Apply carries out schedule on pods, the window opening at start, and
// returns at start. Each update sets an annotation, which the agents and
// the kubelet both treat as a change of the pod (a sync now), to a value
// of its own (tag and the update's number): a patch that sets the value
// the pod already has changes nothing, and nothing syncs. progress is
// told how many updates have been sent.
func Apply(ctx context.Context, pods typedcorev1.PodInterface, schedule []Update, tag string, start time.Time, progress func(done int)) error {
	g, patchCtx := errgroup.WithContext(ctx)
	g.SetLimit(concurrency)
	for i, u := range schedule {
		if sleepUntil(patchCtx, start.Add(u.Offset)) != nil {
			break
		}
		progress(i)
		patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:"%s-%d"}}}`, Annotation, tag, i)
		g.Go(func() error {
			if _, err := pods.Patch(patchCtx, u.Pod, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
				return fmt.Errorf("updating pod %s to mix the pods' sync phases: %w", u.Pod, err)
			}
			return nil
		})
	}
	if err := errors.Join(g.Wait(), ctx.Err()); err != nil {
		return err
	}
	return sleepUntil(ctx, start)
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
