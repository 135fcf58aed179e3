// Package compare runs the before/after experiment of nodeagent: for each
// mode (the kubelet before kubernetes#120255, after it, the watch strategy,
// plain GETs, and the real kubelets beside them; package modes) it runs the
// agents of a fleet against a real apiserver, measures the ConfigMap GETs
// the apiserver serves and the reads that reach etcd, and sets them beside
// the load model of docs/model.md.
//
// A fleet is a way of running the agents, chosen by name (FleetKind): in
// this process, one per simulated node; as processes, one per simulated
// node; or a deployed DaemonSet's, on the cluster's own nodes. Run knows
// them only through the Fleet contract (fleet.go).
//
// A run: ask each fleet's Plan how it runs the scenario; create the
// ConfigMaps and the pods bound to the nodes (and the simulated Nodes, with
// the scenario's TTL); then, per mode, start the fleet's agents, wait until
// every volume they keep is on disk (the warm-up, reported but not
// measured), mix the pods' sync phases, measure for the phase duration from
// the apiserver's own /metrics, and end the phase (a fleet that owns its
// agents stops them; a DaemonSet's roll to the next mode); finally write
// report.json, report.md and a chart (package results).
package compare

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/nodeagent-io/nodeagent/pkg/agent"
	"github.com/nodeagent-io/nodeagent/pkg/compare/modes"
	"github.com/nodeagent-io/nodeagent/pkg/model"
)

// Scenario is what a comparison runs.
type Scenario struct {
	Nodes            int
	PodsPerNode      int
	ConfigMapsPerPod int
	// SharedConfigMaps, when positive, makes every pod draw its ConfigMaps
	// from one pool of that many; zero gives each pod its own.
	SharedConfigMaps int
	SyncFrequency    time.Duration
	// TTL is written to every Node's node.alpha.kubernetes.io/ttl. On a
	// cluster with a TTL controller the controller may overwrite it; each
	// phase uses and reports the value in effect.
	TTL            time.Duration
	PhaseDuration  time.Duration
	SampleInterval time.Duration
	Modes          []modes.Mode
	// AgentQPS is each agent's client rate limit (the kubelet's default 50).
	AgentQPS float32
	// ServiceAccountVolume leaves the run's pods the kube-api-access volume
	// that the ServiceAccount admission plugin gives every pod (its
	// kube-root-ca.crt is read on every sync, like any ConfigMap volume);
	// false sets automountServiceAccountToken: false on them.
	ServiceAccountVolume bool
	// PodPhases says whether each phase mixes its pods' sync phases
	// before measuring (PhasesMixed, the steady state of a node that has
	// run a while) or measures right after its agents start.
	PodPhases PodPhases
	// UpdateRate, when positive, updates the run's ConfigMaps that many
	// times a second, round robin, during each measured window, and
	// measures how long each update takes to reach every volume that
	// mounts it.
	UpdateRate float64
	// PodChurn, when positive, creates that many pods a second on each
	// node during each measured window (a Poisson stream), each deleted
	// PodLifetime after its creation, reading ConfigMaps that no pod
	// which stays reads (ChurnConfigMaps of them per node, each pod
	// ConfigMapsPerPod of them at random) and, with
	// ServiceAccountVolume, kube-root-ca.crt, which every pod reads.
	PodChurn        float64
	PodLifetime     time.Duration
	ChurnConfigMaps int
}

// DefaultScenario is `make demo`: about four minutes on two cores once the
// control plane is built, with a clear difference between the modes.
func DefaultScenario() Scenario {
	return Scenario{
		Nodes:            20,
		PodsPerNode:      10,
		ConfigMapsPerPod: 1,
		SyncFrequency:    5 * time.Second,
		TTL:              25 * time.Second,
		PhaseDuration:    60 * time.Second,
		SampleInterval:   5 * time.Second,
		Modes:            []modes.Mode{modes.EverySync, modes.FirstReference, modes.Watch},
		AgentQPS:         50,

		ServiceAccountVolume: true,
	}
}

// Limits that keep a run meaningful on one machine.
const (
	maxPods = 30000
	// maxExpectedQPS is a ConfigMap GET rate beyond which a two-core
	// apiserver and etcd, sharing the machine with the agents, saturate
	// and the measurement says more about the machine than about the
	// agents. Measured (docs/compare.md, "Growing to 1,000 nodes"): 300
	// nodes asking 238 by Validate's bound were served at the same ratio
	// to the model as 100 nodes; 1,000 nodes asking 795 got 226, with the
	// apiserver at a full core and reads timing out.
	maxExpectedQPS = 250
	// maxChurn bounds the pods a run creates (and deletes) a second over
	// all nodes: each is a create, a delete and every agent's watch event.
	maxChurn = 50
)

// ValidateFlags checks what the flags alone decide, before a fleet fills
// in what it decides (a DaemonSet's nodes, sync frequency and window, which
// its Plan validates with Validate): the command calls it before it
// connects to anything.
func (s Scenario) ValidateFlags() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if s.Nodes < 0 {
		add("--nodes must be 0 (with --daemonset: all of its nodes) or more, got %d", s.Nodes)
	}
	if s.PodsPerNode < 1 {
		add("--pods-per-node must be at least 1, got %d", s.PodsPerNode)
	}
	if s.ConfigMapsPerPod < 1 {
		add("--configmaps-per-pod must be at least 1, got %d", s.ConfigMapsPerPod)
	}
	if s.SharedConfigMaps < 0 {
		add("--shared-configmaps must be 0 (each pod its own) or positive, got %d", s.SharedConfigMaps)
	}
	if s.SharedConfigMaps > 0 && s.SharedConfigMaps < s.ConfigMapsPerPod {
		add("--shared-configmaps %d is smaller than --configmaps-per-pod %d: a pod would mount one ConfigMap twice", s.SharedConfigMaps, s.ConfigMapsPerPod)
	}
	if s.SyncFrequency <= 0 {
		add("--sync-frequency must be positive, got %s", s.SyncFrequency)
	}
	if s.TTL < 0 || s.TTL%time.Second != 0 {
		add("--ttl must be whole seconds, zero or more (the annotation holds seconds), got %s", s.TTL)
	}
	if s.SampleInterval <= 0 {
		add("--sample-interval must be positive, got %s", s.SampleInterval)
	}
	if s.UpdateRate < 0 {
		add("--update-rate must be 0 (no updates) or positive, got %g", s.UpdateRate)
	}
	errs = append(errs, s.validateChurn()...)
	if s.AgentQPS <= 0 {
		add("the agents' QPS must be positive, got %v", s.AgentQPS)
	}
	if len(s.Modes) == 0 {
		add("--modes is empty: choose from %v", modes.Modes)
	}
	return errors.Join(errs...)
}

// Validate checks the whole scenario, saying which flag to change: the
// flags, at least one node, a window of two mean sync intervals, and a
// load each agent's rate limit serves.
func (s Scenario) Validate() error {
	if err := s.ValidateFlags(); err != nil {
		return err
	}
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if s.Nodes < 1 {
		add("--nodes must be at least 1, got %d", s.Nodes)
	}
	if minPhase := MinPhaseDuration(s.SyncFrequency); s.PhaseDuration < minPhase {
		add("--phase-duration %s is shorter than two mean sync intervals (%s at --sync-frequency %s): raise it to at least %s",
			s.PhaseDuration, minPhase, s.SyncFrequency, minPhase)
	}
	if s.PhaseDuration < s.SampleInterval {
		add("--phase-duration %s is shorter than --sample-interval %s", s.PhaseDuration, s.SampleInterval)
	}
	// The heaviest mode must fit the agents' own rate limit, or the agents
	// throttle themselves and the numbers no longer show the kubelet.
	if perNode := s.everySyncGetsPerNode(); perNode > float64(s.AgentQPS)*0.8 {
		add("every-sync would send %.0f GET/s per node, above 80%% of the agent's rate limit (%v QPS), which would throttle it: lower --pods-per-node or --configmaps-per-pod, or raise --sync-frequency", perNode, s.AgentQPS)
	}
	return errors.Join(errs...)
}

// ValidateOnThisMachine is Validate, and a run whose agents and control
// plane all share this machine: the fleets of simulated nodes check it.
func (s Scenario) ValidateOnThisMachine() error {
	if err := s.Validate(); err != nil {
		return err
	}
	var errs []error
	if pods := s.Nodes * s.PodsPerNode; pods > maxPods {
		errs = append(errs, fmt.Errorf("%d pods (--nodes × --pods-per-node) is more than this machine can run agents for (%d): lower --nodes or --pods-per-node", pods, maxPods))
	}
	if churn := s.PodChurn * float64(s.Nodes); churn > maxChurn {
		errs = append(errs, fmt.Errorf("--pod-churn %g on %d nodes creates and deletes %.0f pods a second, more than a local apiserver on this machine keeps up with (%d): lower --pod-churn or --nodes", s.PodChurn, s.Nodes, churn, maxChurn))
	}
	if total := s.everySyncGetsPerNode() * float64(s.Nodes); total > maxExpectedQPS {
		errs = append(errs, fmt.Errorf("every-sync would send %.0f GET/s in total, more than a local apiserver and etcd on this machine serve without queueing (%d): lower --nodes or --pods-per-node, or raise --sync-frequency", total, maxExpectedQPS))
	}
	return errors.Join(errs...)
}

// everySyncGetsPerNode is the heaviest mode's GET rate on one node: every
// volume of every pod read at each sync, and every arriving pod's.
func (s Scenario) everySyncGetsPerNode() float64 {
	mean, _ := model.SyncIntervalMoments(s.SyncFrequency)
	reads := s.ConfigMapsPerPod
	if s.ServiceAccountVolume {
		reads++
	}
	return float64(s.PodsPerNode*reads)/mean + s.PodChurn*float64(reads)
}

// MinPhaseDuration is the shortest measured window that holds two mean
// sync intervals at syncFrequency, rounded up to the second.
func MinPhaseDuration(syncFrequency time.Duration) time.Duration {
	mean, _ := model.SyncIntervalMoments(syncFrequency)
	return time.Duration(math.Ceil(2*mean)) * time.Second
}

// AgentConfig is the configuration of node's agent in mode: the mode's
// settings, the scenario's sync frequency and rate limits, and no HTTP
// endpoints (many agents share this machine).
func (s Scenario) AgentConfig(mode modes.Mode, node, rootDir string) agent.Config {
	cfg := agent.DefaultConfig()
	cfg.NodeName, cfg.RootDir, cfg.SyncFrequency = node, rootDir, s.SyncFrequency
	cfg.Strategy, cfg.Invalidation = mode.CacheOptions()
	cfg.RemountOnChange = mode.RemountOnChange()
	cfg.KubeAPIQPS, cfg.KubeAPIBurst, cfg.HTTPAddress = s.AgentQPS, int(2*s.AgentQPS), ""
	return cfg
}
