package compare

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nodeagent-io/nodeagent/pkg/compare/objects"
	"github.com/nodeagent-io/nodeagent/pkg/compare/results"
	"github.com/nodeagent-io/nodeagent/pkg/compare/updateprobe"
	"github.com/nodeagent-io/nodeagent/pkg/model"
	"github.com/nodeagent-io/nodeagent/pkg/report"
)

// measureWithUpdates is measure with the ConfigMaps updated at the
// scenario's rate throughout the window; then it waits until every update
// is on disk in every volume that mounts it, or the strategy's bound has
// passed, and records the latencies in res.Latency.
func (r *runner) measureWithUpdates(ctx context.Context, f Phase, res *results.PhaseResult, nodes []model.Node, ttl time.Duration) error {
	local, ok := f.(onThisMachine)
	if !ok {
		// compare.CheckFleet refuses --update-rate for such a fleet.
		return errors.New("the fleet's agents write no volumes on this machine's disk, where updates are watched")
	}
	probe, err := updateprobe.New(ctx, r.admin, r.namespace, string(res.Mode), r.scenario.UpdateRate, local.LocalRoots())
	if err != nil {
		return err
	}
	defer probe.Close()
	observeCtx, stopObserving := context.WithCancel(ctx)
	defer stopObserving()
	var observing sync.WaitGroup
	observing.Go(func() { probe.Observe(observeCtx) })

	updateCtx, stopUpdating := context.WithCancel(ctx)
	var updateErr error
	var updating sync.WaitGroup
	updating.Go(func() { updateErr = probe.Update(updateCtx) })
	measureErr := r.measure(ctx, f, res)
	stopUpdating()
	updating.Wait()
	if err := errors.Join(measureErr, updateErr); err != nil {
		return err
	}

	p50, p99, bound := model.UpdateLatency(res.Mode.Behaviour(), r.scenario.SyncFrequency, ttl, podsPerConfigMap(nodes))
	// The drain: the last update may take up to the bound, plus a margin
	// for a loaded machine.
	deadline := time.Now().Add(time.Duration((bound + 5) * float64(time.Second)))
	ticker := time.NewTicker(time.Second)
	defer ticker.Stop()
	for unseen := probe.Unseen(); unseen > 0 && time.Now().Before(deadline); unseen = probe.Unseen() {
		r.progress.Status("%-19s latency  waiting for %d (update, volume) pairs to reach disk, %.0fs at most",
			res.Mode, unseen, time.Until(deadline).Seconds())
		select {
		case <-ctx.Done():
			res.Interrupted = true
			return ctx.Err()
		case <-ticker.C:
		}
	}
	stopObserving()
	observing.Wait()
	lat := probe.Result()
	lat.Unseen = probe.Unseen()
	lat.ModelP50Seconds, lat.ModelP99Seconds, lat.BoundSeconds = p50, p99, bound
	res.Latency = &lat
	r.progress.Done("%-19s latency  %d updates, %d samples: p50 %s, p99 %s, max %s (the kubelet's behaviour: p50 %s, p99 %s)%s",
		res.Mode, lat.Updates, lat.Samples, report.FormatSeconds(lat.P50Seconds), report.FormatSeconds(lat.P99Seconds), report.FormatSeconds(lat.MaxSeconds),
		report.FormatSeconds(p50), report.FormatSeconds(p99), unseenNote(lat.Unseen))
	return nil
}

// podsPerConfigMap is how many pods of a node mount each of the run's
// ConfigMaps (kube-root-ca.crt aside), on average, rounded.
func podsPerConfigMap(nodes []model.Node) int {
	refs, configMaps := 0, 0
	for _, n := range nodes {
		for cm, k := range n.ReadersPerObject() {
			if cm.Name != objects.RootCAConfigMap {
				refs, configMaps = refs+k, configMaps+1
			}
		}
	}
	if configMaps == 0 {
		return 1
	}
	return max(1, (refs+configMaps/2)/configMaps)
}

func unseenNote(unseen int) string {
	if unseen == 0 {
		return ""
	}
	return fmt.Sprintf("; %d not on disk by the end", unseen)
}
