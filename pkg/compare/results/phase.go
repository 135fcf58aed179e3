package results

import (
	"time"

	"github.com/nodeagent-io/nodeagent/pkg/compare/attribution"
	"github.com/nodeagent-io/nodeagent/pkg/compare/modes"
	"github.com/nodeagent-io/nodeagent/pkg/compare/updateprobe"
)

// Sample is the GET rate over one sample interval of a phase.
type Sample struct {
	Seconds      float64 `json:"seconds"`
	APIServerQPS float64 `json:"apiserver_configmap_get_qps"`
	EtcdQPS      float64 `json:"etcd_configmap_get_qps"`
}

// PhaseResult is what one mode measured. The JSON keys are stable.
type PhaseResult struct {
	Mode         modes.Mode `json:"mode"`
	Strategy     string     `json:"strategy"`
	Invalidation string     `json:"invalidation"`
	Description  string     `json:"description"`
	// TTLSeconds is the TTL most of the phase's nodes use; where they
	// differ, TTLLowestSeconds and TTLHighestSeconds bound them (each
	// node's model uses its own).
	TTLSeconds        float64 `json:"ttl_seconds"`
	TTLLowestSeconds  float64 `json:"ttl_lowest_seconds,omitempty"`
	TTLHighestSeconds float64 `json:"ttl_highest_seconds,omitempty"`
	WarmupSeconds     float64 `json:"warmup_seconds"`
	// MixingSeconds is the part of the warm-up spent mixing the pods'
	// sync phases (Scenario.PodPhases): 2·S.
	MixingSeconds        float64 `json:"mixing_seconds,omitempty"`
	MeasuredSeconds      float64 `json:"measured_seconds"`
	APIServerGetTotal    float64 `json:"apiserver_configmap_get_total"`
	APIServerGetQPS      float64 `json:"apiserver_configmap_get_qps"`
	EtcdGetTotal         float64 `json:"etcd_configmap_get_total"`
	EtcdGetQPS           float64 `json:"etcd_configmap_get_qps"`
	ExpectedAPIServerQPS float64 `json:"expected_apiserver_configmap_get_qps"`
	ExpectedEtcdQPS      float64 `json:"expected_etcd_configmap_get_qps"`
	// ExpectedWatches is the watches the model says the nodes keep open.
	ExpectedWatches int `json:"expected_watches,omitempty"`
	// AgentMetrics says whether the agents' own counters below were read;
	// deployed agents may be out of the apiserver proxy's reach.
	AgentMetrics  bool    `json:"agent_metrics"`
	AgentGetTotal float64 `json:"agent_configmap_get_total"`
	// AgentWindowMarginSeconds is how much longer than the measured window
	// the agents' counters' window may be: they are read just before the
	// window's first scrape of the apiserver and just after its last, and
	// each read takes time (seconds on a loaded machine). What the agents
	// sent in the margin, they count and the apiserver's window does not.
	AgentWindowMarginSeconds float64 `json:"agent_window_margin_seconds,omitempty"`
	AgentQuorumGetTotal      float64 `json:"agent_configmap_quorum_get_total"`
	AgentPodSyncs            float64 `json:"agent_pod_syncs_total"`
	AgentCPUSeconds          float64 `json:"agent_cpu_seconds"`
	AgentPeakRSSBytes        int64   `json:"agent_peak_rss_bytes"`
	// AgentRSSBytes is the agents' resident memory at the end of the
	// measured window.
	AgentRSSBytes int64 `json:"agent_rss_bytes"`
	// AgentResources says whose CPU time and memory the three above
	// are: each agent's own process's, or this process's, shared with
	// the run's work; empty where the fleet cannot measure them.
	AgentResources ResourceScope `json:"agent_resources,omitempty"`
	Samples        []Sample      `json:"samples"`
	// Audit is the nodes' requests from the apiserver's audit log, when
	// the run has one (the local control plane).
	Audit *AuditResult `json:"audit,omitempty"`
	// Latency is how long the phase's ConfigMap updates took to reach
	// disk, when the run updates them (--update-rate).
	Latency *updateprobe.Result `json:"latency,omitempty"`
	// Churn is what the pods that came and went did in the window, when
	// the run makes them (--pod-churn).
	Churn       *ChurnResult `json:"churn,omitempty"`
	Interrupted bool         `json:"interrupted,omitempty"`

	// WindowStart and WindowEnd bound the measured window, for reading
	// the same window from elsewhere (a Prometheus that scraped the run).
	WindowStart time.Time `json:"window_start"`
	WindowEnd   time.Time `json:"window_end"`
}

// AuditResult is a phase's ConfigMap requests from the run's nodes, as the
// apiserver's audit log records them (package attribution): the yardstick
// that holds for every fleet, including the reference kubelets, which have
// no metrics of their own here.
type AuditResult = attribution.Result

// ResourceScope is whose CPU time and memory a fleet measures.
type ResourceScope string

const (
	// ResourcesOwn: each agent's own process, from /proc.
	ResourcesOwn ResourceScope = "own"
	// ResourcesShared: the compare process, whose agents share it with
	// the run's own work.
	ResourcesShared ResourceScope = "shared"
)

// ChurnResult is a phase's arriving pods in its window, and the model's
// churn term for the arrivals that happened (the expected GETs above
// include it).
type ChurnResult struct {
	// Arrivals are the pods created in the window, ArrivalQPS the same
	// over all nodes a second; Failed the creations and deletions the
	// apiserver refused over the phase.
	Arrivals   int     `json:"arrivals"`
	ArrivalQPS float64 `json:"arrival_qps"`
	Failed     int     `json:"failed,omitempty"`
	// The model's churn term: GETs at the apiserver and at etcd, and
	// watches opened, a second, over all nodes.
	ExpectedAPIServerQPS float64 `json:"expected_apiserver_get_qps"`
	ExpectedEtcdQPS      float64 `json:"expected_etcd_get_qps"`
	ExpectedWatchOpenQPS float64 `json:"expected_watch_open_qps"`
	// WatchOpenQPS is the nodes' ConfigMap watches opened a second in the
	// window, from the audit log (absent without one).
	WatchOpenQPS *float64 `json:"watch_open_qps,omitempty"`
}
