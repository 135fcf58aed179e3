package compare

import (
	"context"
	"errors"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/nodeagent-io/nodeagent/internal/progress"
	"github.com/nodeagent-io/nodeagent/pkg/agent"
	"github.com/nodeagent-io/nodeagent/pkg/apimetrics"
	"github.com/nodeagent-io/nodeagent/pkg/compare/modes"
	"github.com/nodeagent-io/nodeagent/pkg/compare/results"
	"github.com/nodeagent-io/nodeagent/pkg/model"
	"github.com/nodeagent-io/nodeagent/pkg/podworkers"
)

// Fleet is one way of running the agents that a run's phases measure.
// Each is a package of its own, offered as a FleetKind, chosen by the
// command by name and handed to Run (Options.Agents, Options.Kubelets):
// compare/inprocess (agents in this process, one per simulated node),
// compare/processes (one process per simulated node: `nodeagent run`, or
// the real kubelet), and compare/daemonset (the agents of a DaemonSet on
// the cluster's own nodes). Each validates the run in Plan and says what
// the report must know of it there (Plan.Describe) and in its counters
// (Counters.Resources); Run and the report never ask which it is.
//
// Run calls Plan once, before it creates anything; Start for each phase
// of the fleet's modes, and the phase's Stop, if it has one, at the
// phase's end; and Close once at the end of the run, Ctrl-C included.
type Fleet interface {
	// Plan says how the fleet runs the scenario: the scenario with what
	// the fleet decides filled in, the nodes that get the run's pods and
	// how the phases wait for them. It fails, saying what to change, when
	// the fleet cannot run it (on this machine, or on this cluster). It
	// changes nothing on the cluster.
	Plan(ctx context.Context, run RunInfo) (Plan, error)
	// Start runs the agents in mode and returns the running phase; stagger
	// spreads the agents' starts where the fleet controls them.
	Start(ctx context.Context, mode modes.Mode, stagger time.Duration) (Phase, error)
	// Close undoes what the fleet did, on the cluster and on this
	// machine; interrupted: the run was cut short, return promptly.
	Close(interrupted bool)
}

// RunInfo is what a fleet's Plan learns of the run.
type RunInfo struct {
	// Scenario is the scenario as the options give it.
	Scenario Scenario
	// Namespace holds the run's pods and ConfigMaps.
	Namespace string
	// Client reaches the apiserver with the run's setup identity.
	Client kubernetes.Interface
	// OutputDir receives the run's files: a fleet's logs go there.
	OutputDir string
	Progress  *progress.Progress
}

// Plan is how a fleet runs a scenario.
type Plan struct {
	// Scenario is the run's scenario, validated, with what the fleet
	// decides (a DaemonSet's nodes, sync frequency and TTL) filled in.
	Scenario Scenario
	// Nodes is the run's layout: the nodes that get its pods, and the pods.
	Nodes []model.Node
	// SimulatedNodes: the run creates its Nodes, tainted and annotated
	// with the scenario's TTL, for this fleet's agents; otherwise they are
	// the cluster's own, described by NodesDescription.
	SimulatedNodes   bool
	NodesDescription string
	// AlsoServed lists, for every node the fleet's agents run on, the
	// pods outside the run that they keep volumes for too, which the model
	// counts. Nil when the agents serve the run's pods only.
	AlsoServed map[string][]model.Pod
	// WarmupExtra is how much longer than the scenario's own allowance the
	// agents may take to mount every volume, and WarmupPoll how often to
	// ask them.
	WarmupExtra, WarmupPoll time.Duration
	// Describe, when set, adds to the report what a reader must know of
	// the fleet.
	Describe func(*results.ScenarioReport)
	// PodImage is the image of the run's pods, for a fleet on nodes whose
	// kubelets start them; default DefaultPodImage.
	PodImage string
}

// Phase is a fleet's agents while they run one mode.
type Phase interface {
	// VolumesMounted counts the volumes the agents have on disk.
	// ErrNoAgentMetrics: the fleet cannot tell.
	VolumesMounted(ctx context.Context) (int, error)
	// Counters sums the agents' own counters. The first call of a phase
	// starts the CPU and peak-memory measurement, so that the warm-up is
	// not in it. ErrNoAgentMetrics: the fleet cannot tell.
	Counters(ctx context.Context) (Counters, error)
}

// stoppable is a phase whose agents the fleet owns and stops at the
// phase's end (a DaemonSet's keep running; the next phase rolls them).
type stoppable interface{ Stop() }

// onThisMachine is a phase whose agents write their volumes on this
// machine, under one root directory per node, where the run can watch
// updates arrive (Scenario.UpdateRate).
type onThisMachine interface{ LocalRoots() map[string]string }

// ErrNoAgentMetrics says the agents' own metrics cannot be read; the
// apiserver's counters still can.
var ErrNoAgentMetrics = errors.New("the agents' metrics are not reachable")

// Counters are the agents' own counters, summed, plus the resources they
// used where that can be measured (zero where it cannot).
type Counters struct {
	// Requests says whether Gets, QuorumGets and Syncs were counted: the
	// reference kubelets' are not (the audit log has their requests).
	Requests                bool
	Gets, QuorumGets, Syncs float64
	CPUSeconds              float64
	// RSSBytes is resident memory now, PeakRSSBytes its peak since the
	// phase's first Counters call (where the fleet can reset the peak).
	RSSBytes, PeakRSSBytes int64
	// Resources says whose CPU time and memory these are.
	Resources results.ResourceScope
}

// AddFrom adds one agent's metrics to c.
func (c *Counters) AddFrom(s *apimetrics.Snapshot) {
	c.Requests = true
	c.Gets += s.Sum(agent.MetricConfigMapGets, nil)
	c.QuorumGets += s.Sum(agent.MetricConfigMapGets, map[string]string{agent.LabelResourceVersion: agent.ResourceVersionUnset})
	c.Syncs += s.Sum(agent.MetricPodWork, map[string]string{agent.LabelKind: string(podworkers.KindSync)})
}

// Staggered runs start(i) for i in [0, n) in goroutines of wg, the i-th
// after i/n of stagger, and skips those not yet started when ctx ends:
// how the fleets that start their agents themselves spread the starts.
func Staggered(ctx context.Context, wg *sync.WaitGroup, n int, stagger time.Duration, start func(i int)) {
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
