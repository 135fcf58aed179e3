package compare

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/nodeagent-io/nodeagent/pkg/agent"
	"github.com/nodeagent-io/nodeagent/pkg/apimetrics"
	"github.com/nodeagent-io/nodeagent/pkg/model"
	"github.com/nodeagent-io/nodeagent/pkg/nodeidentity"
	"github.com/nodeagent-io/nodeagent/pkg/podworkers"
	"github.com/nodeagent-io/nodeagent/pkg/volumemanager"
)

// fleet is the set of agents a phase measures: agents in this process,
// one per simulated node (inProcessFleet); the agents of a DaemonSet
// deployed on the cluster's nodes (daemonSetFleet); or the real kubelet,
// one process per simulated node (processFleet). The phase loop treats
// them alike.
type fleet interface {
	// prepare runs once, after the run's objects exist and before the
	// fleet's first phase. own is the run's layout; it returns what the
	// fleet serves, which the model counts (a DaemonSet's agents also
	// serve the cluster's other pods).
	prepare(ctx context.Context, own []model.Node) ([]model.Node, error)
	// cleanup undoes prepare at the end of the run, Ctrl-C included
	// (interrupted: return promptly).
	cleanup(interrupted bool)
	// warmup is how much longer than the scenario's own allowance the
	// fleet may take to mount every volume, and how often to ask it.
	warmup() (extra, poll time.Duration)
	// start runs the agents in mode and returns once they run; stagger
	// spreads the agents' starts where the fleet controls them.
	start(ctx context.Context, mode Mode, stagger time.Duration) error
	// volumesMounted counts the volumes the agents have on disk.
	// errNoAgentMetrics: the fleet cannot tell.
	volumesMounted(ctx context.Context) (int, error)
	// counters sums the agents' own counters. errNoAgentMetrics: the
	// fleet cannot tell.
	counters(ctx context.Context) (agentCounters, error)
	// stop ends the phase's agents, where the fleet owns them.
	stop()
	// localRoots maps each node to the root directory its agent writes
	// volumes under on this machine, while a phase runs; nil when the
	// agents' disks are elsewhere.
	localRoots() map[string]string
}

// errNoAgentMetrics says the agents' own metrics cannot be read; the
// apiserver's counters still can.
var errNoAgentMetrics = errors.New("the agents' metrics are not reachable")

// agentCounters are the agents' own counters, summed, plus the resources
// they used where that can be measured (zero where it cannot).
type agentCounters struct {
	// requests says whether gets, quorumGets and syncs were counted: the
	// reference kubelets' are not (the audit log has their requests).
	requests                bool
	gets, quorumGets, syncs float64
	cpuSeconds              float64
	// rssBytes is resident memory now, peakRSSBytes its peak since the
	// phase's first counters call (where the fleet can reset the peak).
	rssBytes, peakRSSBytes int64
}

// addFrom adds one agent's metrics to c.
func (c *agentCounters) addFrom(s *apimetrics.Snapshot) {
	c.requests = true
	c.gets += s.Sum(agent.MetricConfigMapGets, nil)
	c.quorumGets += s.Sum(agent.MetricConfigMapGets, map[string]string{agent.LabelResourceVersion: agent.ResourceVersionUnset})
	c.syncs += s.Sum(agent.MetricPodWork, map[string]string{agent.LabelKind: string(podworkers.KindSync)})
}

// inProcessFleet runs one agent per simulated node in this process, so the
// process's own CPU time and peak RSS are the agents'.
type inProcessFleet struct {
	scenario   Scenario
	restConfig *rest.Config
	// actAsNodes makes each node's agent act as that node's kubelet (see
	// asNode) instead of as restConfig's user.
	actAsNodes bool
	nodes      []model.Node
	workDir    string
	log        logr.Logger

	// registries, when set, receives each phase's agents' registries for
	// the metrics server (Options.MetricsAddress).
	registries *agentRegistries

	agents     []*agent.Agent
	events     record.EventBroadcaster
	mode       Mode
	stopAgents context.CancelFunc
	wg         sync.WaitGroup
	// cpuAtStart is the process's CPU time when the agents started
	// measuring (the first counters call of a phase).
	cpuAtStart time.Duration
	measuring  bool
}

func (f *inProcessFleet) prepare(_ context.Context, own []model.Node) ([]model.Node, error) {
	return own, nil
}

func (f *inProcessFleet) cleanup(bool) { _ = os.RemoveAll(f.workDir) }

func (f *inProcessFleet) warmup() (extra, poll time.Duration) { return 0, 250 * time.Millisecond }

func (f *inProcessFleet) start(_ context.Context, mode Mode, stagger time.Duration) error {
	f.mode, f.agents = mode, make([]*agent.Agent, len(f.nodes))
	// One event broadcaster for all the agents (agent.SharedEvents),
	// posting as restConfig's user with the agents' event rate limit.
	events, err := eventClient(f.restConfig)
	if err != nil {
		return err
	}
	f.events = record.NewBroadcaster()
	f.events.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: events.CoreV1().Events("")})
	for i, node := range f.nodes {
		restConfig := f.restConfig
		if f.actAsNodes {
			restConfig = asNode(f.restConfig, node.Name)
		}
		cfg := f.scenario.agentConfig(mode, node.Name, filepath.Join(f.workDir, string(mode), node.Name))
		var err error
		if f.agents[i], err = agent.New(restConfig, cfg, agent.SharedEvents(f.events)); err != nil {
			return err
		}
	}
	if f.registries != nil {
		gatherers := make(prometheus.Gatherers, len(f.agents))
		for i, a := range f.agents {
			gatherers[i] = nodeGatherer{node: f.nodes[i].Name, from: a.Metrics.Registry}
		}
		f.registries.set(gatherers)
	}
	// The agents outlive start's ctx: stop ends them.
	agentCtx, cancel := context.WithCancel(klog.NewContext(context.Background(), f.log.WithValues("mode", mode)))
	f.stopAgents, f.measuring = cancel, false
	staggered(agentCtx, &f.wg, len(f.agents), stagger, func(i int) {
		if err := f.agents[i].Run(agentCtx); err != nil {
			f.log.Error(err, "Agent failed", "node", f.nodes[i].Name)
		}
	})
	return nil
}

// asNode is restConfig impersonating node's kubelet: user
// system:node:<node> in group system:nodes. The apiserver then authorizes
// and admits each request as the node's (the Node authorizer grants it
// its own Node, its pods and their ConfigMaps, nothing else) and the audit
// log attributes it to the node, as with the node's own client
// certificate; the requests themselves are the same. What differs is the
// connection: a certificate per node is a TLS connection per node, and at
// 1,000 nodes on two cores those connections missed their keepalive pings
// under load and dropped, each drop a relist (docs/compare.md, "Growing to
// 1,000 nodes"). Clients that share restConfig's credentials share its
// transport (client-go caches it), whose HTTP/2 connections carry up to
// the apiserver's 1,000 streams each.
func asNode(restConfig *rest.Config, node string) *rest.Config {
	c := rest.CopyConfig(restConfig)
	c.Impersonate = rest.ImpersonationConfig{UserName: nodeidentity.User(node), Groups: []string{nodeidentity.Group}}
	return c
}

// staggered runs start(i) for i in [0, n) in goroutines of wg, the i-th
// after i/n of stagger, and skips those not yet started when ctx ends.
func staggered(ctx context.Context, wg *sync.WaitGroup, n int, stagger time.Duration, start func(i int)) {
	for i := range n {
		delay := time.Duration(int64(stagger) * int64(i) / int64(n))
		wg.Go(func() {
			select {
			case <-time.After(delay):
				start(i)
			case <-ctx.Done():
			}
		})
	}
}

func (f *inProcessFleet) volumesMounted(context.Context) (int, error) {
	mounted := 0
	for _, a := range f.agents {
		for _, v := range a.Volumes() {
			if v.State != volumemanager.StateMountFailing {
				mounted++
			}
		}
	}
	return mounted, nil
}

// counters sums the agents' registries. The first call of a phase also
// starts the CPU and peak-RSS measurement, so that the warm-up is not in
// them.
func (f *inProcessFleet) counters(context.Context) (agentCounters, error) {
	if !f.measuring {
		f.measuring, f.cpuAtStart = true, cpuTime()
		resetPeakRSS()
	}
	c := agentCounters{cpuSeconds: (cpuTime() - f.cpuAtStart).Seconds(), rssBytes: rss(), peakRSSBytes: peakRSS()}
	var errs []error
	for _, a := range f.agents {
		s, err := apimetrics.Gather(a.Metrics.Registry)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		c.addFrom(s)
	}
	return c, errors.Join(errs...)
}

func (f *inProcessFleet) localRoots() map[string]string {
	roots := map[string]string{}
	for _, node := range f.nodes {
		roots[node.Name] = filepath.Join(f.workDir, string(f.mode), node.Name)
	}
	return roots
}

func (f *inProcessFleet) stop() {
	if f.stopAgents != nil {
		f.stopAgents()
	}
	f.wg.Wait()
	if f.registries != nil {
		f.registries.set(nil)
	}
	if f.events != nil {
		f.events.Shutdown()
	}
	_ = os.RemoveAll(filepath.Join(f.workDir, string(f.mode)))
}

// eventClient is a client for the shared events of in-process agents,
// with one agent's event rate limit.
func eventClient(restConfig *rest.Config) (*kubernetes.Clientset, error) {
	c := rest.CopyConfig(restConfig)
	defaults := agent.DefaultConfig()
	c.QPS, c.Burst = defaults.EventQPS, defaults.EventBurst
	return kubernetes.NewForConfig(c)
}
