package compare

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/nodeagent-io/nodeagent/internal/progress"
	"github.com/nodeagent-io/nodeagent/pkg/apimetrics"
	"github.com/nodeagent-io/nodeagent/pkg/compare/modes"
	"github.com/nodeagent-io/nodeagent/pkg/compare/results"
	"github.com/nodeagent-io/nodeagent/pkg/model"
)

// runner holds what every phase of one comparison shares.
type runner struct {
	scenario Scenario
	admin    kubernetes.Interface
	// nodes is the run's layout, as planned; simulatedNodes says the run
	// creates them, else nodesDescription says whose they are.
	nodes            []model.Node
	simulatedNodes   bool
	nodesDescription string
	// fleetFor is the fleet that runs a mode, plans each fleet's plan.
	fleetFor func(modes.Mode) Fleet
	plans    map[Fleet]Plan
	// served is what each fleet serves, which the model counts: the run's
	// pods, and for a DaemonSet's agents also the cluster's other pods
	// with ConfigMap volumes on their nodes.
	served   map[Fleet][]model.Node
	progress *progress.Progress
	// auditLog, when set, attributes the ConfigMap requests to nodes.
	auditLog string
	// namespace holds the run's pods and ConfigMaps.
	namespace string
	// profileDir, when set, receives a CPU profile of each measured
	// window and a heap profile at its end.
	profileDir string
}

// runPhase measures one mode. It returns what it measured so far, marked
// interrupted, when ctx ends early.
func (r *runner) runPhase(ctx context.Context, mode modes.Mode) (results.PhaseResult, error) {
	strategy, invalidation := mode.CacheOptions()
	res := results.PhaseResult{Mode: mode, Strategy: string(strategy), Invalidation: string(invalidation), Description: mode.Describe()}
	f := r.fleetFor(mode)
	nodes, plan := r.served[f], r.plans[f]
	ttls, err := nodeTTLs(ctx, r.admin, nodes)
	if err != nil {
		return res, err
	}
	ttlInEffect, prediction := r.expect(&res, nodes, mode, ttls)

	// (1) Start the agents, spread over one cycle of what drives the
	// GETs: the mean sync interval, or with a TTL-driven cache one
	// refresh cycle. Agents started in the same second would sync and
	// refresh in lockstep, and a one-minute window would catch a whole
	// burst or miss it; on a real cluster nodes are out of phase.
	stagger := model.GetCycle(mode.Behaviour(), r.scenario.SyncFrequency, ttlInEffect)
	warmupStart := time.Now()
	phase, err := f.Start(ctx, mode, stagger)
	if err != nil {
		res.Interrupted = ctx.Err() != nil
		res.WarmupSeconds = time.Since(warmupStart).Seconds()
		return res, err
	}
	if s, ok := phase.(stoppable); ok {
		defer s.Stop()
	}

	// (2) and (3): every volume on disk, the pods' phases mixed, and the
	// arriving pods, if any, coming and going as they will in the window.
	churning, err := r.warmUp(ctx, phase, plan, mode, nodes, stagger, &res, warmupStart)
	defer func() {
		if err := churning.stop(); err != nil {
			r.progress.Done("%-19s %v", mode, err)
		}
	}()
	if err != nil {
		return res, err
	}

	// (4) Measure, updating ConfigMaps meanwhile if asked to.
	stopProfile, err := r.startProfile(mode)
	if err != nil {
		return res, err
	}
	defer stopProfile()
	if r.scenario.UpdateRate > 0 {
		err = r.measureWithUpdates(ctx, phase, &res, nodes, ttlInEffect)
	} else {
		err = r.measure(ctx, phase, &res)
	}
	if churning != nil && err == nil {
		nodes, prediction = r.predictArrivals(churning, &res, nodes, mode, ttls)
	}
	if err == nil && r.auditLog != "" {
		err = r.attribute(&res, nodes, warmupStart, prediction)
	}
	return res, err
}

// expect records in res the TTL the phase's nodes use and the model's
// prediction for them before the window (a run with arrivals predicts
// again from those that happened), and returns the TTL most nodes use and
// the prediction.
func (r *runner) expect(res *results.PhaseResult, nodes []model.Node, mode modes.Mode, ttls map[string]time.Duration) (time.Duration, model.Prediction) {
	ttlInEffect, lowest, highest := CommonTTL(ttls)
	res.TTLSeconds = ttlInEffect.Seconds()
	if lowest != highest {
		res.TTLLowestSeconds, res.TTLHighestSeconds = lowest.Seconds(), highest.Seconds()
	}
	prediction := Prediction(nodes, r.scenario.SyncFrequency, mode, ttls)
	expected := prediction.ByKind[model.ConfigMap]
	res.ExpectedAPIServerQPS, res.ExpectedEtcdQPS, res.ExpectedWatches = expected.APIServerGetQPS, expected.EtcdGetQPS, expected.Watches
	return ttlInEffect, prediction
}

// warmUp waits until every volume of nodes is on disk, starts the
// arriving pods (--pod-churn) and, when the run mixes the pods' phases,
// mixes them; it records the warm-up in res. The churn it returns (nil
// without one) is running, settled, until its stop.
func (r *runner) warmUp(ctx context.Context, phase Phase, plan Plan, mode modes.Mode, nodes []model.Node, stagger time.Duration, res *results.PhaseResult, warmupStart time.Time) (*runningChurn, error) {
	failed := func(err error) (*runningChurn, error) {
		res.Interrupted = ctx.Err() != nil
		res.WarmupSeconds = time.Since(warmupStart).Seconds()
		return nil, err
	}
	// (2) Warm-up: wait until every volume is on disk.
	want := 0
	for _, n := range nodes {
		want += n.Volumes()
	}
	if err := r.waitForVolumes(ctx, phase, plan, mode, want, stagger, warmupStart, time.Now()); err != nil {
		return failed(err)
	}
	churning := r.startChurn(ctx, mode, nodes)
	// (3) Mix the pods' phases: the agents just synced each node's pods
	// together, and the model is of a node whose pods did not start
	// together (docs/model.md, "Right after a start"). It takes 2·S.
	if r.scenario.PodPhases == PhasesMixed {
		mixingStart := time.Now()
		if err := r.mixPodPhases(ctx, mode, mixingStart.Add(2*r.scenario.SyncFrequency)); err != nil {
			_, err = failed(err)
			return churning, err
		}
		res.MixingSeconds = time.Since(mixingStart).Seconds()
	}
	if err := churning.waitSettled(ctx); err != nil {
		return churning, err
	}
	res.WarmupSeconds = time.Since(warmupStart).Seconds()
	return churning, nil
}

// waitForVolumes waits until the agents have want volumes on disk. When
// the agents' metrics cannot be read it waits one cycle past running (when
// the last agent started) instead, by when every pod has synced.
//
// It gives up only when the agents have stopped making progress: past the
// allowance for the scenario's size, and with no new volume on disk for a
// stall window of one mount retry backoff and one refresh cycle. A slower
// machine (a laptop, a loaded CI runner) mounts the same volumes later, not
// never; a stuck agent mounts none.
func (r *runner) waitForVolumes(ctx context.Context, f Phase, plan Plan, mode modes.Mode, want int, cycle time.Duration, start, running time.Time) error {
	s := r.scenario
	// Creating and mounting thousands of volumes takes a while on two
	// cores; a stagger adds one refresh cycle.
	refresh := model.RefreshCycle(s.SyncFrequency, s.TTL)
	allowance := 2*time.Minute + time.Duration(s.Nodes*s.PodsPerNode)*20*time.Millisecond + refresh + plan.WarmupExtra
	// A node whose mounts failed while it started (on a loaded machine,
	// a kubelet's first syncs can fail before it registers the pods'
	// objects) retries them only after its longest backoff, and then
	// mounts them all at once: the stall window holds one such backoff.
	stall := model.MountRetryInterval + refresh + plan.WarmupExtra
	progress := newVolumeProgress(clock.RealClock{}, start, allowance, stall)
	err := wait.PollUntilContextCancel(ctx, plan.WarmupPoll, true, func(ctx context.Context) (bool, error) {
		mounted, err := f.VolumesMounted(ctx)
		switch {
		case errors.Is(err, ErrNoAgentMetrics):
			left := time.Until(running.Add(cycle))
			r.progress.Status("%-19s warm-up  %5.0fs  agents' metrics unreachable: waiting one cycle, %.0fs left", mode, time.Since(start).Seconds(), left.Seconds())
			if left <= 0 {
				r.progress.Done("%-19s warm-up done in %.1fs (one cycle; the agents' metrics are unreachable)", mode, time.Since(start).Seconds())
				return true, nil
			}
			return false, nil
		case err != nil:
			return false, err
		}
		starting := ""
		if time.Since(start) < cycle {
			starting = fmt.Sprintf(" (agents starting over %.1fs, one cycle)", cycle.Seconds())
		}
		r.progress.Status("%-19s warm-up  %5.0fs  volumes on disk %d/%d%s", mode, time.Since(start).Seconds(), mounted, want, starting)
		if mounted >= want {
			r.progress.Done("%-19s warm-up done in %.1fs: %d volumes on disk", mode, time.Since(start).Seconds(), want)
			return true, nil
		}
		if progress.stuck(mounted) {
			return false, fmt.Errorf("%s: only %d of %d volumes on disk after %s, none new for %s; %s",
				mode, mounted, want, time.Since(start).Round(time.Second), progress.stall.Round(time.Second), behind(ctx, f, r.served[r.fleetFor(mode)]))
		}
		return false, nil
	})
	return err
}

// volumesByNode is a phase that can count the volumes on disk node by
// node, and says where the nodes' logs are (name.log).
type volumesByNode interface {
	VolumesMountedByNode(ctx context.Context) (map[string]int, string, error)
}

// behind names the nodes whose volumes are not all on disk, where the
// phase can tell, and where their logs are.
func behind(ctx context.Context, f Phase, nodes []model.Node) string {
	counter, ok := f.(volumesByNode)
	if !ok {
		return "see the agents' logs"
	}
	byNode, logDir, err := counter.VolumesMountedByNode(ctx)
	if err != nil {
		return "see the agents' logs"
	}
	var lagging []string
	for _, n := range nodes {
		if got, want := byNode[n.Name], n.Volumes(); got < want {
			lagging = append(lagging, fmt.Sprintf("%s (%d of %d)", n.Name, got, want))
		}
	}
	const named = 8
	more := ""
	if len(lagging) > named {
		lagging, more = lagging[:named], fmt.Sprintf(" and %d more", len(lagging)-named)
	}
	return fmt.Sprintf("behind: %s%s; their logs are NODE.log in %s", strings.Join(lagging, ", "), more, logDir)
}

// volumeProgress decides when a warm-up has stopped making progress: past
// its allowance, with the count of volumes on disk unchanged for the stall
// window.
type volumeProgress struct {
	clock      clock.PassiveClock
	deadline   time.Time
	stall      time.Duration
	mounted    int
	lastChange time.Time
}

func newVolumeProgress(c clock.PassiveClock, start time.Time, allowance, stall time.Duration) *volumeProgress {
	return &volumeProgress{clock: c, deadline: start.Add(allowance), stall: stall, lastChange: start}
}

// stuck records the count of volumes on disk now and says whether to give
// up.
func (p *volumeProgress) stuck(mounted int) bool {
	now := p.clock.Now()
	if mounted != p.mounted {
		p.mounted, p.lastChange = mounted, now
	}
	return now.After(p.deadline) && now.Sub(p.lastChange) > p.stall
}

// measure samples the apiserver every sample interval for the phase
// duration, and fills in the totals and rates.
func (r *runner) measure(ctx context.Context, f Phase, res *results.PhaseResult) error {
	agentStartRead := time.Now()
	agentStart, err := f.Counters(ctx)
	agentMetrics := !errors.Is(err, ErrNoAgentMetrics)
	if err != nil && agentMetrics {
		return err
	}
	first, last, err := r.sampleWindow(ctx, res)
	if err != nil {
		return err
	}
	var agentEnd Counters
	if agentMetrics {
		if agentEnd, err = f.Counters(ctx); err != nil {
			// An agent restarted or became unreachable mid-phase: its
			// counters would not add up, the apiserver's still do.
			klog.FromContext(ctx).Info("Agents' counters unreadable at the end of the phase", "mode", res.Mode, "err", err)
			agentMetrics = false
		}
	}
	agentEndRead := time.Now()
	res.MeasuredSeconds = last.Time.Sub(first.Time).Seconds()
	res.APIServerGetTotal = last.APIServerConfigMapGets() - first.APIServerConfigMapGets()
	res.EtcdGetTotal = last.EtcdConfigMapGets() - first.EtcdConfigMapGets()
	if res.MeasuredSeconds > 0 {
		res.APIServerGetQPS = res.APIServerGetTotal / res.MeasuredSeconds
		res.EtcdGetQPS = res.EtcdGetTotal / res.MeasuredSeconds
	}
	if agentMetrics {
		addAgentCounters(res, agentStart, agentEnd)
		firstRead := first.Read
		if firstRead.IsZero() {
			firstRead = first.Time
		}
		res.AgentWindowMarginSeconds = firstRead.Sub(agentStartRead).Seconds() + agentEndRead.Sub(last.Time).Seconds()
	}
	res.WindowStart, res.WindowEnd = first.Time, last.Time
	r.progress.Done("%-19s measured %.0fs: apiserver %.2f GET/s, etcd %.2f get/s (model %.2f / %.2f)",
		res.Mode, res.MeasuredSeconds, res.APIServerGetQPS, res.EtcdGetQPS, res.ExpectedAPIServerQPS, res.ExpectedEtcdQPS)
	if res.Interrupted {
		return ctx.Err()
	}
	return nil
}

// sampleWindow scrapes the apiserver's counters at the window's start and
// every sample interval until the phase duration has passed (or ctx ends:
// res.Interrupted), recording each interval's rates in res.Samples; it
// returns the first and the last scrape.
func (r *runner) sampleWindow(ctx context.Context, res *results.PhaseResult) (first, last *apimetrics.Snapshot, err error) {
	if first, err = apimetrics.ScrapeAPIServer(ctx, r.admin.CoreV1().RESTClient()); err != nil {
		return nil, nil, err
	}
	prev, last := first, first
	ticker := time.NewTicker(r.scenario.SampleInterval)
	defer ticker.Stop()
	deadline := first.Time.Add(r.scenario.PhaseDuration)
	for last.Time.Before(deadline) {
		select {
		case <-ctx.Done():
			res.Interrupted = true
			return first, last, nil
		case <-ticker.C:
		}
		next, err := apimetrics.ScrapeAPIServer(ctx, r.admin.CoreV1().RESTClient())
		if err != nil && ctx.Err() != nil {
			// Interrupted while the scrape was in flight (on a loaded
			// machine a scrape takes a while): the window ends at the
			// last scrape that came back.
			res.Interrupted = true
			return first, last, nil
		}
		if err != nil {
			return nil, nil, err
		}
		interval := next.Time.Sub(prev.Time).Seconds()
		sample := results.Sample{
			Seconds:      next.Time.Sub(first.Time).Seconds(),
			APIServerQPS: (next.APIServerConfigMapGets() - prev.APIServerConfigMapGets()) / interval,
			EtcdQPS:      (next.EtcdConfigMapGets() - prev.EtcdConfigMapGets()) / interval,
		}
		res.Samples = append(res.Samples, sample)
		r.progress.Status("%-19s measure  %3.0fs/%.0fs  apiserver %7.1f GET/s  etcd %7.1f get/s  (model %.1f)",
			res.Mode, sample.Seconds, r.scenario.PhaseDuration.Seconds(), sample.APIServerQPS, sample.EtcdQPS, res.ExpectedAPIServerQPS)
		prev, last = next, next
	}
	return first, last, nil
}

// addAgentCounters records what the agents' own counters say of the
// window between start and end.
func addAgentCounters(res *results.PhaseResult, start, end Counters) {
	res.AgentMetrics = end.Requests
	if res.AgentMetrics {
		res.AgentGetTotal = end.Gets - start.Gets
		res.AgentQuorumGetTotal = end.QuorumGets - start.QuorumGets
		res.AgentPodSyncs = end.Syncs - start.Syncs
	}
	res.AgentCPUSeconds = end.CPUSeconds - start.CPUSeconds
	res.AgentPeakRSSBytes, res.AgentRSSBytes = end.PeakRSSBytes, end.RSSBytes
	res.AgentResources = end.Resources
}
