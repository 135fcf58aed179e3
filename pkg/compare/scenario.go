// Package compare runs the before/after experiment of nodeagent: for each
// mode (the kubelet before kubernetes#120255, after it, the watch strategy,
// plain GETs) it runs one agent per simulated node against a real
// apiserver, measures the ConfigMap GETs the apiserver serves and the reads
// that reach etcd, and sets them beside the load model of docs/model.md.
//
// A run: create Nodes (TTL annotation from the scenario), ConfigMaps and
// pods bound to the nodes; then, per mode, start the agents, wait until
// every volume is on disk (the warm-up, reported but not measured),
// measure for the phase duration from the apiserver's own /metrics, stop
// the agents; finally write report.json, report.md and a chart.
package compare

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/nodeagent-io/nodeagent/pkg/configmapcache"
)

// Mode is one configuration of the agents measured in a phase.
type Mode string

const (
	ModeEverySync      Mode = "every-sync"
	ModeFirstReference Mode = "first-reference"
	ModeWatch          Mode = "watch"
	// ModeWatchAtSync is the watch strategy without remount-on-change: a
	// change reaches disk at each pod's next sync, as with the kubelet's
	// Watch strategy.
	ModeWatchAtSync Mode = "watch-at-sync"
	ModeGet         Mode = "get"

	// The reference kubelets: the real kubelet's code (hack/refkubelet),
	// one process per simulated node.
	ModeKubeletV128      Mode = "kubelet-v1.28"
	ModeKubeletV136      Mode = "kubelet-v1.36"
	ModeKubeletV136Watch Mode = "kubelet-v1.36-watch"
)

// Modes lists the valid modes.
var Modes = []Mode{ModeEverySync, ModeFirstReference, ModeWatch, ModeWatchAtSync, ModeGet, ModeKubeletV128, ModeKubeletV136, ModeKubeletV136Watch}

// referenceKubelets maps each reference mode onto the nodeagent mode that
// claims its behaviour, for the model and the fidelity lines.
var referenceKubelets = map[Mode]Mode{
	ModeKubeletV128:      ModeEverySync,
	ModeKubeletV136:      ModeFirstReference,
	ModeKubeletV136Watch: ModeWatchAtSync,
}

// IsReferenceKubelet says whether m runs the real kubelet.
func (m Mode) IsReferenceKubelet() bool {
	_, ok := referenceKubelets[m]
	return ok
}

// Counterpart pairs a nodeagent mode with the reference kubelet of the
// same behaviour, and back; "" when there is none (get).
func (m Mode) Counterpart() Mode {
	if agentMode, ok := referenceKubelets[m]; ok {
		return agentMode
	}
	for ref, agentMode := range referenceKubelets {
		if agentMode == m {
			return ref
		}
	}
	return ""
}

// behaviour is the nodeagent mode whose model m follows: m itself, or
// the counterpart of a reference kubelet.
func (m Mode) behaviour() Mode {
	if agentMode, ok := referenceKubelets[m]; ok {
		return agentMode
	}
	return m
}

// kubeletSettings are a reference mode's binary (refkubelet-<version>) and
// configMapAndSecretChangeDetectionStrategy.
func (m Mode) kubeletSettings() (binary, strategy string) {
	switch m {
	case ModeKubeletV128:
		return "refkubelet-v1.28", "Cache"
	case ModeKubeletV136Watch:
		return "refkubelet-v1.36", "Watch"
	default:
		return "refkubelet-v1.36", "Cache"
	}
}

// agentSettings maps a mode onto the agent's strategy and invalidation; a
// reference kubelet onto those of its counterpart.
func (m Mode) agentSettings() (configmapcache.Strategy, configmapcache.Invalidation) {
	switch m.behaviour() {
	case ModeEverySync:
		return configmapcache.StrategyCache, configmapcache.InvalidateEverySync
	case ModeWatch, ModeWatchAtSync:
		return configmapcache.StrategyWatch, configmapcache.InvalidateFirstReference
	case ModeGet:
		return configmapcache.StrategyGet, configmapcache.InvalidateFirstReference
	default:
		return configmapcache.StrategyCache, configmapcache.InvalidateFirstReference
	}
}

// remountOnChange says whether the agents remount a ConfigMap's pods as
// soon as their watch sees it change (nodeagent's watch mode only).
func (m Mode) remountOnChange() bool { return m == ModeWatch }

// usesWatch says whether m's agents watch ConfigMaps, which needs list and
// watch on them.
func (m Mode) usesWatch() bool {
	strategy, _ := m.agentSettings()
	return strategy == configmapcache.StrategyWatch
}

// Describe says in a few words what a mode is.
func (m Mode) Describe() string {
	switch m {
	case ModeEverySync:
		return "cache, invalidated on every pod sync (kubelet ≤ v1.28, before #120255)"
	case ModeFirstReference:
		return "cache, invalidated on first reference only (kubelet ≥ v1.29, after #120255)"
	case ModeWatch:
		return "one watch per ConfigMap, no GETs; a change remounts its pods at once"
	case ModeWatchAtSync:
		return "one watch per ConfigMap, no GETs; a change reaches disk at each pod's next sync"
	case ModeGet:
		return "a quorum GET on every remount, no cache"
	case ModeKubeletV128:
		return "the real kubelet v1.28.15, Cache strategy (before #120255)"
	case ModeKubeletV136:
		return "the real kubelet v1.36.3, Cache strategy (after #120255)"
	case ModeKubeletV136Watch:
		return "the real kubelet v1.36.3, Watch strategy"
	}
	return string(m)
}

// ParseModes reads a comma-separated list of modes.
func ParseModes(list string) ([]Mode, error) {
	var modes []Mode
	seen := map[Mode]bool{}
	for _, part := range strings.Split(list, ",") {
		m := Mode(strings.TrimSpace(part))
		if m == "" {
			continue
		}
		valid := false
		for _, known := range Modes {
			valid = valid || m == known
		}
		if !valid {
			return nil, fmt.Errorf("unknown mode %q: choose from %v", m, Modes)
		}
		if seen[m] {
			return nil, fmt.Errorf("mode %q given twice", m)
		}
		seen[m] = true
		modes = append(modes, m)
	}
	if len(modes) == 0 {
		return nil, errors.New("no modes given: choose one or more of " + fmt.Sprint(Modes))
	}
	return modes, nil
}

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
	Modes          []Mode
	// AgentQPS is each agent's client rate limit (the kubelet's default 50).
	AgentQPS float32
	// ServiceAccountVolume leaves the run's pods the kube-api-access volume
	// that the ServiceAccount admission plugin gives every pod (its
	// kube-root-ca.crt is read on every sync, like any ConfigMap volume);
	// false sets automountServiceAccountToken: false on them.
	ServiceAccountVolume bool
	// UpdateRate, when positive, updates the run's ConfigMaps that many
	// times a second, round robin, during each measured window, and
	// measures how long each update takes to reach every volume that
	// mounts it.
	UpdateRate float64
	// Remote says the agents are deployed on a cluster rather than run in
	// this process, so this machine's limits do not apply.
	Remote bool
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
		Modes:            []Mode{ModeEverySync, ModeFirstReference, ModeWatch},
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
)

// Validate fails fast, saying which flag to change.
func (s Scenario) Validate() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if s.Nodes < 1 {
		add("--nodes must be at least 1, got %d", s.Nodes)
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
	if s.AgentQPS <= 0 {
		add("the agents' QPS must be positive, got %v", s.AgentQPS)
	}
	if len(s.Modes) == 0 {
		add("--modes is empty: choose from %v", Modes)
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}

	if pods := s.Nodes * s.PodsPerNode; pods > maxPods && !s.Remote {
		add("%d pods (--nodes × --pods-per-node) is more than this machine can run agents for (%d): lower --nodes or --pods-per-node", pods, maxPods)
	}
	mean, _ := syncIntervalMoments(s.SyncFrequency)
	if minPhase := MinPhaseDuration(s.SyncFrequency); s.PhaseDuration < minPhase {
		add("--phase-duration %s is shorter than two mean sync intervals (%s at --sync-frequency %s): raise it to at least %s",
			s.PhaseDuration, minPhase, s.SyncFrequency, minPhase)
	}
	if s.PhaseDuration < s.SampleInterval {
		add("--phase-duration %s is shorter than --sample-interval %s", s.PhaseDuration, s.SampleInterval)
	}
	// The heaviest mode must fit the agents' own rate limit, or the agents
	// throttle themselves and the numbers no longer show the kubelet.
	reads := s.ConfigMapsPerPod
	if s.ServiceAccountVolume {
		reads++
	}
	perNode := float64(s.PodsPerNode*reads) / mean
	if perNode > float64(s.AgentQPS)*0.8 {
		add("every-sync would send %.0f GET/s per node, above 80%% of the agent's rate limit (%v QPS), which would throttle it: lower --pods-per-node or --configmaps-per-pod, or raise --sync-frequency", perNode, s.AgentQPS)
	}
	if total := perNode * float64(s.Nodes); total > maxExpectedQPS && !s.Remote {
		add("every-sync would send %.0f GET/s in total, more than a local apiserver and etcd on this machine serve without queueing (%d): lower --nodes or --pods-per-node, or raise --sync-frequency", total, maxExpectedQPS)
	}
	return errors.Join(errs...)
}

// MinPhaseDuration is the shortest measured window that holds two mean
// sync intervals at syncFrequency, rounded up to the second.
func MinPhaseDuration(syncFrequency time.Duration) time.Duration {
	mean, _ := syncIntervalMoments(syncFrequency)
	return time.Duration(math.Ceil(2*mean)) * time.Second
}

// syncIntervalMoments returns the mean and the mean square, in seconds, of
// the time between two periodic syncs of a pod: the requeue delay
// S·(1 + U[0,0.5)) plus the wait U[0,1) s for the next 1 s tick.
func syncIntervalMoments(s time.Duration) (mean, meanSquare float64) {
	sec := s.Seconds()
	mean = 1.25*sec + 0.5
	variance := (0.5*sec)*(0.5*sec)/12 + 1.0/12
	return mean, variance + mean*mean
}
