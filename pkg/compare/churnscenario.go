package compare

import (
	"fmt"
	"time"

	"github.com/nodeagent-io/nodeagent/pkg/compare/objects"
	"github.com/nodeagent-io/nodeagent/pkg/model"
)

// Defaults of the churn's settings, when --pod-churn is given alone.
const (
	// DefaultChurnConfigMaps is how many ConfigMaps each node's arriving
	// pods draw from.
	DefaultChurnConfigMaps = 4
)

// validateChurn checks the churn's flags. A pod that arrives lives less
// than one sync period, so that it never syncs again before it goes: what
// it costs is then its arrival alone, which is what the model's churn term
// counts (its periodic syncs would be steady load of a pod there a while).
func (s Scenario) validateChurn() []error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if s.PodChurn < 0 {
		add("--pod-churn must be 0 (pods stay) or positive, got %g", s.PodChurn)
	}
	if s.PodChurn == 0 {
		return errs
	}
	if s.PodLifetime <= 0 || s.PodLifetime > s.SyncFrequency {
		add("--pod-lifetime %s: want more than zero and at most --sync-frequency %s, so that an arriving pod is gone before its first periodic sync", s.PodLifetime, s.SyncFrequency)
	}
	if s.ChurnConfigMaps < s.ConfigMapsPerPod {
		add("--churn-configmaps %d is fewer than --configmaps-per-pod %d: an arriving pod would mount one ConfigMap twice", s.ChurnConfigMaps, s.ConfigMapsPerPod)
	}
	return errs
}

// churnConfigMaps names the ConfigMaps node n's arriving pods draw from.
func churnConfigMaps(namespace string, node, count int) []model.Object {
	out := make([]model.Object, count)
	for i := range out {
		out[i] = configMap(namespace, fmt.Sprintf("%s%03d-%d", objects.ArrivingConfigMapPrefix, node, i))
	}
	return out
}

// withArrivals gives each of the layout's nodes the arrivals the scenario
// asks for: each churn ConfigMap is read by a share ConfigMapsPerPod of
// ChurnConfigMaps of the node's arrivals, kube-root-ca.crt by every one.
func withArrivals(s Scenario, namespace string, nodes []model.Node) {
	if s.PodChurn <= 0 {
		return
	}
	share := s.PodChurn * float64(s.ConfigMapsPerPod) / float64(s.ChurnConfigMaps)
	// The reference kubelets' fake runtime starts containers at once, and
	// they run until the pod is deleted (as churn.Churner.Arrivals says).
	resyncs := model.PLEGResyncs(0, s.PodLifetime)
	for i := range nodes {
		var arrivals []model.Arrival
		for _, cm := range churnConfigMaps(namespace, i, s.ChurnConfigMaps) {
			arrivals = append(arrivals, model.Arrival{Object: cm, Rate: share, Lifetime: s.PodLifetime, Resyncs: resyncs})
		}
		if s.ServiceAccountVolume {
			arrivals = append(arrivals, model.Arrival{Object: configMap(namespace, objects.RootCAConfigMap), Rate: s.PodChurn,
				Lifetime: s.PodLifetime, Resyncs: resyncs})
		}
		nodes[i].Arrivals = arrivals
	}
}

// churnStart is how long before a window the churn starts: long enough
// that the pods there are as many as on average, one lifetime.
func (s Scenario) churnStart() time.Duration { return s.PodLifetime }
