// Package inprocess is compare's fleet of agents in the compare process,
// one per simulated node of a local control plane or of a cluster, so that
// a thousand nodes fit on one machine. The process's own CPU time and peak
// memory are the agents' (with the run's own work).
package inprocess

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
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
	"github.com/nodeagent-io/nodeagent/pkg/compare"
	"github.com/nodeagent-io/nodeagent/pkg/compare/modes"
	"github.com/nodeagent-io/nodeagent/pkg/compare/results"
	"github.com/nodeagent-io/nodeagent/pkg/model"
	"github.com/nodeagent-io/nodeagent/pkg/nodeidentity"
	"github.com/nodeagent-io/nodeagent/pkg/volumemanager/core"
)

// Options configure New.
type Options struct {
	// RESTConfig reaches the apiserver; the agents use copies.
	RESTConfig *rest.Config
	// ActAsNodes makes each node's agent act as that node's kubelet (see
	// asNode) instead of as RESTConfig's user, which must then be allowed
	// to impersonate nodes: on a local control plane, so that the audit
	// log attributes each request to its node.
	ActAsNodes bool
	// MetricsAddress, when set, is where this process serves the agents'
	// metrics, at /metrics, each series labelled with its node as the
	// chart's PodMonitor labels a DaemonSet's: point a Prometheus at it to
	// watch a run with deploy/prometheus's rules and dashboard.
	MetricsAddress string
}

// Fleet runs one agent per simulated node in this process.
type Fleet struct {
	opts Options
	// Set by Plan.
	scenario compare.Scenario
	nodes    []model.Node
	workDir  string
	logFile  *os.File
	log      logr.Logger
	// registries, when the metrics are served, holds each phase's agents'.
	registries    *agentRegistries
	stopServing   context.CancelFunc
	eventsClients *kubernetes.Clientset
}

// New returns the fleet, or why its options cannot make one.
func New(opts Options) (*Fleet, error) {
	if opts.RESTConfig == nil {
		return nil, errors.New("inprocess: a RESTConfig is required")
	}
	return &Fleet{opts: opts}, nil
}

// Plan lays the scenario out on simulated nodes, once it fits this
// machine; it opens agents.log in the output directory, and starts serving
// the metrics when asked, so that a bad address fails before anything is
// created.
func (f *Fleet) Plan(ctx context.Context, run compare.RunInfo) (compare.Plan, error) {
	s := run.Scenario
	if err := s.ValidateOnThisMachine(); err != nil {
		return compare.Plan{}, err
	}
	events, err := eventClient(f.opts.RESTConfig)
	if err != nil {
		return compare.Plan{}, err
	}
	logFile, err := os.Create(filepath.Join(run.OutputDir, "agents.log"))
	if err != nil {
		return compare.Plan{}, err
	}
	f.scenario, f.nodes, f.eventsClients = s, compare.Layout(s, run.Namespace), events
	f.workDir, f.logFile = filepath.Join(run.OutputDir, "nodes"), logFile
	f.log = logr.FromSlogHandler(slog.NewTextHandler(logFile, &slog.HandlerOptions{Level: slog.LevelInfo}))
	if f.opts.MetricsAddress != "" {
		serveCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		f.registries, f.stopServing = &agentRegistries{}, cancel
		if err := serveMetrics(serveCtx, f.opts.MetricsAddress, f.registries); err != nil {
			return compare.Plan{}, err
		}
	}
	return compare.Plan{Scenario: s, Nodes: f.nodes, SimulatedNodes: true, WarmupPoll: 250 * time.Millisecond}, nil
}

// Close stops serving the metrics and removes the agents' disks.
func (f *Fleet) Close(bool) {
	if f.stopServing != nil {
		f.stopServing()
	}
	if f.logFile != nil {
		_ = f.logFile.Close()
	}
	if f.workDir != "" {
		_ = os.RemoveAll(f.workDir)
	}
}

// Start builds and runs one agent per node in mode.
func (f *Fleet) Start(_ context.Context, mode modes.Mode, stagger time.Duration) (compare.Phase, error) {
	p := &phase{fleet: f, mode: mode, agents: make([]*agent.Agent, len(f.nodes))}
	// One event broadcaster for all the agents (agent.SharedEvents),
	// posting as RESTConfig's user with the agents' event rate limit.
	p.events = record.NewBroadcaster()
	p.events.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: f.eventsClients.CoreV1().Events("")})
	for i, node := range f.nodes {
		restConfig := f.opts.RESTConfig
		if f.opts.ActAsNodes {
			restConfig = asNode(restConfig, node.Name)
		}
		cfg := f.scenario.AgentConfig(mode, node.Name, p.rootDir(node.Name))
		var err error
		if p.agents[i], err = agent.New(restConfig, cfg, agent.SharedEvents(p.events)); err != nil {
			p.events.Shutdown()
			return nil, err
		}
	}
	if f.registries != nil {
		gatherers := make(prometheus.Gatherers, len(p.agents))
		for i, a := range p.agents {
			gatherers[i] = nodeGatherer{node: f.nodes[i].Name, from: a.Metrics.Registry}
		}
		f.registries.set(gatherers)
	}
	// The agents outlive Start's ctx: Stop ends them.
	agentCtx, cancel := context.WithCancel(klog.NewContext(context.Background(), f.log.WithValues("mode", mode)))
	p.stopAgents = cancel
	compare.Staggered(agentCtx, &p.wg, len(p.agents), stagger, func(i int) {
		if err := p.agents[i].Run(agentCtx); err != nil {
			f.log.Error(err, "Agent failed", "node", f.nodes[i].Name)
		}
	})
	return p, nil
}

// phase is the agents of one mode.
type phase struct {
	fleet      *Fleet
	mode       modes.Mode
	agents     []*agent.Agent
	events     record.EventBroadcaster
	stopAgents context.CancelFunc
	wg         sync.WaitGroup
	// cpuAtStart is the process's CPU time when the agents started
	// measuring (the first Counters call).
	cpuAtStart time.Duration
	measuring  bool
}

func (p *phase) rootDir(node string) string {
	return filepath.Join(p.fleet.workDir, string(p.mode), node)
}

func (p *phase) VolumesMounted(context.Context) (int, error) {
	mounted := 0
	for _, a := range p.agents {
		for _, v := range a.Volumes() {
			if v.State != core.StateMountFailing {
				mounted++
			}
		}
	}
	return mounted, nil
}

// Counters sums the agents' registries, and the process's CPU time and
// memory.
func (p *phase) Counters(context.Context) (compare.Counters, error) {
	if !p.measuring {
		p.measuring, p.cpuAtStart = true, cpuTime()
		resetPeakRSS()
	}
	c := compare.Counters{CPUSeconds: (cpuTime() - p.cpuAtStart).Seconds(), RSSBytes: rss(), PeakRSSBytes: peakRSS(), Resources: results.ResourcesShared}
	var errs []error
	for _, a := range p.agents {
		s, err := apimetrics.Gather(a.Metrics.Registry)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		c.AddFrom(s)
	}
	return c, errors.Join(errs...)
}

// LocalRoots are the agents' root directories on this machine.
func (p *phase) LocalRoots() map[string]string {
	roots := map[string]string{}
	for _, node := range p.fleet.nodes {
		roots[node.Name] = p.rootDir(node.Name)
	}
	return roots
}

// Stop ends the agents and removes their volumes.
func (p *phase) Stop() {
	p.stopAgents()
	p.wg.Wait()
	if p.fleet.registries != nil {
		p.fleet.registries.set(nil)
	}
	p.events.Shutdown()
	_ = os.RemoveAll(filepath.Join(p.fleet.workDir, string(p.mode)))
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

// eventClient is a client for the shared events of in-process agents,
// with one agent's event rate limit.
func eventClient(restConfig *rest.Config) (*kubernetes.Clientset, error) {
	c := rest.CopyConfig(restConfig)
	defaults := agent.DefaultConfig()
	c.QPS, c.Burst = defaults.EventQPS, defaults.EventBurst
	client, err := kubernetes.NewForConfig(c)
	if err != nil {
		return nil, fmt.Errorf("the agents' events client: %w", err)
	}
	return client, nil
}
