package compare

import (
	"context"
	"sync"
	"time"

	"github.com/nodeagent-io/nodeagent/pkg/compare/churn"
	"github.com/nodeagent-io/nodeagent/pkg/compare/modes"
	"github.com/nodeagent-io/nodeagent/pkg/compare/objects"
	"github.com/nodeagent-io/nodeagent/pkg/compare/results"
	"github.com/nodeagent-io/nodeagent/pkg/model"
)

// churnSeed makes every phase's arrivals the same stream, so that the
// modes compared side by side face the same pods at the same moments.
const churnSeed = 1

// runningChurn is a phase's arriving pods while they come and go; nil
// when the run makes none, and then every method does nothing.
type runningChurn struct {
	churner *churn.Churner
	started time.Time
	settle  time.Duration
	cancel  context.CancelFunc
	done    chan error
	stopped sync.Once
	err     error
}

// startChurn starts the phase's arriving pods on nodes (each node's pool
// is its plan's arrivals but kube-root-ca.crt, which every pod reads).
func (r *runner) startChurn(ctx context.Context, mode modes.Mode, nodes []model.Node) *runningChurn {
	s := r.scenario
	if s.PodChurn <= 0 {
		return nil
	}
	pools := map[string][]model.Object{}
	for _, n := range nodes {
		for _, a := range n.Arrivals {
			if a.Object.Name != objects.RootCAConfigMap {
				pools[n.Name] = append(pools[n.Name], a.Object)
			}
		}
	}
	cfg := churn.Config{
		Client: r.admin, Namespace: r.namespace, Pools: pools, PerPod: s.ConfigMapsPerPod,
		Rate: s.PodChurn, Lifetime: s.PodLifetime, Seed: churnSeed,
		Pod: objects.Options{PodImage: r.podImage(), ServiceAccountVolume: s.ServiceAccountVolume},
	}
	if s.ServiceAccountVolume {
		rootCA := configMap(r.namespace, objects.RootCAConfigMap)
		cfg.Shared = &rootCA
	}
	c := &runningChurn{churner: churn.New(cfg), started: time.Now(), settle: s.churnStart(), done: make(chan error, 1)}
	churnCtx, cancel := context.WithCancel(ctx)
	c.cancel = cancel
	go func() { c.done <- c.churner.Run(churnCtx) }()
	r.progress.Done("%-19s arriving pods: %g a second on each node, each there %s", mode, s.PodChurn, s.PodLifetime)
	return c
}

// waitSettled waits until the churn has run one pod lifetime, when as many
// arriving pods are there as on average.
func (c *runningChurn) waitSettled(ctx context.Context) error {
	if c == nil {
		return nil
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Until(c.started.Add(c.settle))):
		return nil
	}
}

// stop ends the churn and returns once its pods are gone; again, it
// returns what it did the first time.
func (c *runningChurn) stop() error {
	if c == nil {
		return nil
	}
	c.stopped.Do(func() {
		c.cancel()
		c.err = <-c.done
	})
	return c.err
}

// withArrivalsIn is nodes with the arrivals that happened in the window
// in place of the planned ones.
func (c *runningChurn) withArrivalsIn(nodes []model.Node, from, to time.Time) (out []model.Node, pods int) {
	if c == nil {
		return nodes, 0
	}
	byNode, pods := c.churner.Arrivals(from, to)
	out = make([]model.Node, len(nodes))
	for i, n := range nodes {
		n.Arrivals = byNode[n.Name]
		out[i] = n
	}
	return out, pods
}

// predictArrivals predicts the phase again with the arrivals that
// happened in its window, and records them beside the churn's term.
func (r *runner) predictArrivals(c *runningChurn, res *results.PhaseResult, nodes []model.Node, mode modes.Mode, ttls map[string]time.Duration) ([]model.Node, model.Prediction) {
	nodes, arrived := c.withArrivalsIn(nodes, res.WindowStart, res.WindowEnd)
	prediction := Prediction(nodes, r.scenario.SyncFrequency, mode, ttls)
	expected := prediction.ByKind[model.ConfigMap]
	res.ExpectedAPIServerQPS, res.ExpectedEtcdQPS = expected.APIServerGetQPS, expected.EtcdGetQPS
	res.Churn = c.churnResult(res, arrived, prediction)
	return nodes, prediction
}

// churnResult is the window's churn beside the model's term for it.
func (c *runningChurn) churnResult(res *results.PhaseResult, pods int, p model.Prediction) *results.ChurnResult {
	if c == nil {
		return nil
	}
	expected := p.ByKind[model.ConfigMap].Churn
	out := &results.ChurnResult{
		Arrivals: pods, Failed: c.churner.Failed(),
		ExpectedAPIServerQPS: expected.APIServerGetQPS, ExpectedEtcdQPS: expected.EtcdGetQPS, ExpectedWatchOpenQPS: expected.WatchOpenQPS,
	}
	if res.MeasuredSeconds > 0 {
		out.ArrivalQPS = float64(pods) / res.MeasuredSeconds
	}
	return out
}
