package agent

import (
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/nodeagent-io/nodeagent/pkg/configmapcache"
	"github.com/nodeagent-io/nodeagent/pkg/model"
	"github.com/nodeagent-io/nodeagent/pkg/podconfig"
	"github.com/nodeagent-io/nodeagent/pkg/podworkers"
	"github.com/nodeagent-io/nodeagent/pkg/volumemanager/reconciler"
)

// Metrics are one agent's Prometheus metrics, on a registry of its own so
// that many agents can live in one process (nodeagent compare). No label
// holds a pod or ConfigMap name: cardinality stays fixed however many pods
// a node runs.
type Metrics struct {
	Registry *prometheus.Registry

	configMapGets    *prometheus.CounterVec
	cacheLookups     *prometheus.CounterVec
	podWork          *prometheus.CounterVec
	podWorkDuration  *prometheus.HistogramVec
	volumeOps        *prometheus.CounterVec
	volumeOpDuration *prometheus.HistogramVec
	changeDelay      prometheus.Histogram
	volumesMounted   prometheus.Gauge
	volumeWrites     prometheus.Counter
	podUpdates       *prometheus.CounterVec
}

// Metric names that tools (nodeagent compare, the e2e tests) read.
const (
	MetricConfigMapGets  = "nodeagent_configmap_get_requests_total"
	MetricCacheLookups   = "nodeagent_configmap_cache_lookups_total"
	MetricPodWork        = "nodeagent_pod_work_total"
	MetricVolumeOps      = "nodeagent_volume_operations_total"
	MetricVolumesMounted = "nodeagent_volumes_mounted"
	MetricVolumeWrites   = "nodeagent_volume_writes_total"
	MetricChangeDelay    = "nodeagent_volume_change_read_seconds"
	MetricPodUpdates     = "nodeagent_pod_updates_total"
)

// Labels and values of the metrics that tools read.
const (
	LabelResourceVersion = "resource_version"
	LabelKind            = "kind"
	// ResourceVersionUnset marks a GET without resourceVersion: a quorum
	// read that reaches etcd.
	ResourceVersionUnset = "unset"
)

// NewMetrics registers the agent's metrics on a new registry.
func NewMetrics(strategy model.Strategy, invalidation configmapcache.Invalidation, version string) *Metrics {
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		configMapGets: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricConfigMapGets,
			Help: `ConfigMap GET requests sent to the apiserver, by strategy and resourceVersion ("0": served from the watch cache; "unset": a quorum read that reaches etcd).`,
		}, []string{"strategy", LabelResourceVersion}),
		cacheLookups: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricCacheLookups,
			Help: "ConfigMap reads of the cache strategy, by outcome: fresh (no GET), expired (GET at resourceVersion 0), invalidated or miss (quorum GET).",
		}, []string{"outcome"}),
		podWork: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricPodWork,
			Help: "Pod syncs and teardowns run by the pod workers, by kind and result.",
		}, []string{LabelKind, "result"}),
		podWorkDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "nodeagent_pod_work_duration_seconds",
			Help:    "Duration of pod syncs and teardowns.",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 10),
		}, []string{"kind"}),
		volumeOps: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricVolumeOps,
			Help: "ConfigMap and projected volume mounts, remounts and unmounts, by result.",
		}, []string{"operation", "result"}),
		volumeOpDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "nodeagent_volume_operation_duration_seconds",
			Help:    "Duration of volume operations, including the ConfigMap reads.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 4, 10),
		}, []string{"operation"}),
		changeDelay: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: MetricChangeDelay,
			Help: "From a watch's delivery of a change of a ConfigMap or Secret a volume reads to the volume's files holding it: " +
				"the driver's share of an update's delay, and in the watch mode the reconciler's wait for its grid.",
			Buckets: []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120},
		}),
		volumesMounted: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: MetricVolumesMounted,
			Help: "ConfigMap and projected volumes on disk.",
		}),
		volumeWrites: prometheus.NewCounter(prometheus.CounterOpts{
			Name: MetricVolumeWrites,
			Help: "Mounts and remounts that wrote a new generation of a volume to disk; a remount that finds the content unchanged writes nothing.",
		}),
		podUpdates: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricPodUpdates,
			Help: "Pod updates from the API, by what they changed: sync (spec, labels, annotations, deletion), status-only or ignored (bookkeeping). Only sync updates, and status updates that finish a pod, reach the pod workers.",
		}, []string{"change"}),
	}
	m.register(strategy, invalidation, version)
	return m
}

// NewVolumeMetrics returns the metrics of a process that writes volumes
// but runs no pods, the CSI driver: the volume operations, the volumes on
// disk and their writes, and nodeagent_info with the version alone (no
// strategy: the driver always watches). The pods' metrics are not
// registered: the driver would report them as zeros for ever.
func NewVolumeMetrics(version string) *Metrics {
	m := NewMetrics(model.StrategyWatch, configmapcache.InvalidateFirstReference, version)
	m.Registry = prometheus.NewRegistry()
	m.registerVolumes(prometheus.Labels{"version": version})
	return m
}

// register registers m's metrics and nodeagent_info, and makes the series
// tools compare, so that a zero is a zero and not a missing series.
func (m *Metrics) register(strategy model.Strategy, invalidation configmapcache.Invalidation, version string) {
	m.Registry.MustRegister(m.configMapGets, m.cacheLookups, m.podWork, m.podWorkDuration, m.podUpdates)
	for _, rv := range []string{"0", ResourceVersionUnset} {
		m.configMapGets.WithLabelValues(strategyLabel(strategy), rv)
	}
	m.registerVolumes(prometheus.Labels{"version": version, "strategy": strategyLabel(strategy), "invalidation": string(invalidation)})
}

// registerVolumes registers the volumes' metrics, and nodeagent_info with
// the labels given.
func (m *Metrics) registerVolumes(info prometheus.Labels) {
	gauge := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "nodeagent_info",
		Help:        "Always 1; the labels say how this agent is configured.",
		ConstLabels: info,
	})
	gauge.Set(1)
	m.Registry.MustRegister(m.volumeOps, m.volumeOpDuration, m.changeDelay, m.volumesMounted, m.volumeWrites, gauge)
	for _, op := range []reconciler.OperationKind{reconciler.Mount, reconciler.Remount, reconciler.Unmount} {
		for _, r := range []string{"success", "error"} {
			m.volumeOps.WithLabelValues(string(op), r)
		}
	}
}

// PodUpdate counts one pod update from the API by what it changed.
func (m *Metrics) PodUpdate(change podconfig.Change) {
	m.podUpdates.WithLabelValues(change.String()).Inc()
}

func result(err error) string {
	if err != nil {
		return "error"
	}
	return "success"
}

// GetSent implements configmapcache.Recorder.
func (m *Metrics) GetSent(strategy model.Strategy, resourceVersion string) {
	if resourceVersion == "" {
		resourceVersion = ResourceVersionUnset
	}
	m.configMapGets.WithLabelValues(strategyLabel(strategy), resourceVersion).Inc()
}

// Lookup implements configmapcache.Recorder.
func (m *Metrics) Lookup(outcome configmapcache.Lookup) {
	m.cacheLookups.WithLabelValues(string(outcome)).Inc()
}

// WorkDone implements podworkers.Recorder.
func (m *Metrics) WorkDone(kind podworkers.Kind, err error, d time.Duration) {
	m.podWork.WithLabelValues(string(kind), result(err)).Inc()
	m.podWorkDuration.WithLabelValues(string(kind)).Observe(d.Seconds())
}

// OperationDone implements reconciler.Recorder.
func (m *Metrics) OperationDone(op reconciler.OperationKind, err error, d time.Duration) {
	m.volumeOps.WithLabelValues(string(op), result(err)).Inc()
	m.volumeOpDuration.WithLabelValues(string(op)).Observe(d.Seconds())
}

// VolumeWritten implements reconciler.Recorder.
func (m *Metrics) VolumeWritten() { m.volumeWrites.Inc() }

// ChangeRead implements reconciler.Recorder.
func (m *Metrics) ChangeRead(delay time.Duration) { m.changeDelay.Observe(delay.Seconds()) }

// VolumesMounted implements reconciler.Recorder.
func (m *Metrics) VolumesMounted(n int) { m.volumesMounted.Set(float64(n)) }

// strategyLabel is a strategy as the metrics' strategy label spells it:
// in lower case (get, cache, watch), as it always has, so that the queries,
// recording rules and alerts written against it keep working.
func strategyLabel(s model.Strategy) string { return strings.ToLower(string(s)) }
