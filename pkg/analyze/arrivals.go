package analyze

import (
	"cmp"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/nodeagent-io/nodeagent/pkg/model"
	"github.com/nodeagent-io/nodeagent/pkg/podrefs"
	"github.com/nodeagent-io/nodeagent/pkg/podrefs/inventory"
)

// DefaultArrivalWindow is how far back analyze counts pods' arrivals
// unless told (--churn-window): long enough for a CronJob of every few
// minutes, short enough that yesterday's batch run is not today's churn.
const DefaultArrivalWindow = time.Hour

// Sighting is one pod seen on a node, running or finished: where and
// when it arrived, whether and when it left, and what its volumes read.
// A one-shot run sees the pods the API lists (SightingsOf); `analyze
// --serve` also remembers the pods it saw go.
type Sighting struct {
	Namespace, Name, Node string
	// Workload is what made the pod, as inventory.WorkloadOf says.
	Workload string
	// Started is when its first container started, zero where none did
	// (or, for a pod seen running, none runs).
	Created, Started, Ended time.Time
	// Finished says the pod ran to its end (Succeeded or Failed); Ended,
	// where not zero, is when it left its node, finished or deleted.
	Finished    bool
	Refs        podrefs.Refs
	Unconverted []inventory.UnconvertedVolume
}

// SightingOfPod is a pod the inventory lists as running on its node.
func SightingOfPod(p inventory.PodInfo) Sighting {
	return Sighting{Namespace: p.Namespace, Name: p.Name, Node: p.Node, Workload: p.Workload, Created: p.Created,
		Started: p.FirstStarted, Refs: p.Refs, Unconverted: p.Unconverted}
}

// SightingOfFinished is a pod the inventory lists as finished.
func SightingOfFinished(p inventory.FinishedPod) Sighting {
	return Sighting{Namespace: p.Namespace, Name: p.Name, Node: p.Node, Workload: p.Workload, Created: p.Created,
		Started: p.Started, Ended: p.Ended, Finished: true, Refs: p.Refs, Unconverted: p.Unconverted}
}

// SightingsOf are the pods inv lists, running and finished.
func SightingsOf(inv *inventory.Inventory) []Sighting {
	out := make([]Sighting, 0, len(inv.Pods)+len(inv.Finished))
	for _, p := range inv.Pods {
		out = append(out, SightingOfPod(p))
	}
	for _, p := range inv.Finished {
		out = append(out, SightingOfFinished(p))
	}
	return out
}

// workloadArrivals is one workload's pods arriving on the cluster's
// nodes, as estimated from its pods' creation times.
type workloadArrivals struct {
	namespace, workload string
	// rate is its pods a second, over all nodes; byNode splits it.
	rate     float64
	byNode   map[string]float64
	lifetime time.Duration
	// resyncs is how many times a pod is synced again while it runs
	// (meanResyncs).
	resyncs float64
	// reads are what one of its pods' volumes read (its newest), and
	// driverReads what its driver volumes keep watches on; refs and
	// unconverted are that pod's, for moving it (movedToDriver).
	reads, driverReads []model.Object
	refs               podrefs.Refs
	unconverted        []inventory.UnconvertedVolume
}

// cronJobRun matches the name of a Job a CronJob made: the CronJob's name
// and the scheduled time in minutes since the epoch.
var cronJobRun = regexp.MustCompile(`^Job/(.+)-[0-9]{8,}$`)

// arrivalWorkload is w as arrivals group it: a CronJob's runs are one
// workload, whose Jobs each make a pod or a few.
func arrivalWorkload(w string) string {
	if m := cronJobRun.FindStringSubmatch(w); m != nil {
		return "CronJob/" + m[1]
	}
	return w
}

// estimateArrivals estimates, from the sightings in the window before
// now, the arrivals of each workload whose pods finish (a Job's, a
// CronJob's: some of its pods in the window finished), each of its pods
// there as long as those that left stayed on average (arrivalRate says
// how often they come). Its running pods are passing: the arrivals count
// them, and the pods that stay do not; passing lists them by node.
//
// A one-shot run sees what the API lists: a Job cleaned up at once shows
// nothing finished, and is not counted. Nor are the pods a rollout
// replaced, which never finish: a new pod of a Deployment looks the same
// whether the Deployment is new or rolled.
func estimateArrivals(inv *inventory.Inventory, sightings []Sighting, now time.Time, window time.Duration) (out []workloadArrivals, passing map[string][]podKey) {
	type key struct{ namespace, workload string }
	groups := map[key][]Sighting{}
	for _, s := range sightings {
		if now.Sub(s.Created) <= window {
			k := key{s.Namespace, arrivalWorkload(s.Workload)}
			groups[k] = append(groups[k], s)
		}
	}
	passing = map[string][]podKey{}
	for k, seen := range groups {
		if !slices.ContainsFunc(seen, func(s Sighting) bool { return s.Finished }) {
			continue
		}
		w := workloadArrivals{namespace: k.namespace, workload: k.workload, byNode: map[string]float64{},
			rate: arrivalRate(k.workload, seen, window), lifetime: meanLifetime(seen)}
		w.resyncs = meanResyncs(seen, w.lifetime)
		for _, s := range seen {
			w.byNode[s.Node] += w.rate / float64(len(seen))
		}
		newest := slices.MaxFunc(seen, func(a, b Sighting) int { return a.Created.Compare(b.Created) })
		w.refs, w.unconverted = newest.Refs, newest.Unconverted
		w.readsOf(inv, newest.Name)
		if len(w.reads) == 0 && len(w.driverReads) == 0 {
			continue
		}
		out = append(out, w)
		for _, s := range seen {
			if !s.Finished && s.Ended.IsZero() {
				passing[s.Node] = append(passing[s.Node], podKey{k.namespace, s.Name})
			}
		}
	}
	slices.SortFunc(out, func(a, b workloadArrivals) int {
		return cmp.Or(cmp.Compare(a.namespace, b.namespace), cmp.Compare(a.workload, b.workload))
	})
	for _, pods := range passing {
		slices.SortFunc(pods, func(a, b podKey) int {
			return cmp.Or(cmp.Compare(a.namespace, b.namespace), cmp.Compare(a.name, b.name))
		})
	}
	return out, passing
}

// readsOf sets w's reads from its refs: its kubelet volumes' and its
// driver volumes' (those that can mount).
func (w *workloadArrivals) readsOf(inv *inventory.Inventory, pod string) {
	w.reads = podrefs.ModelPod(w.namespace, pod, w.refs, inv.Exists).Reads
	w.driverReads = nil
	c := Cluster{Inventory: inv}
	for _, v := range w.refs.DriverVolumes {
		if reads, ok := c.driverReads(w.namespace, v); ok {
			w.driverReads = append(w.driverReads, reads...)
		}
	}
}

// arrivalRate is how many of a workload's pods arrive a second, from its
// sightings in the window. A CronJob's runs come on its schedule, and the
// API keeps only its last few Jobs: their spacing is the rate, (runs − 1)
// over the span from the first run's pods to the last one's, times its
// pods a run. Any other workload's pods (a Job's stay listed until the
// Job goes, a burst of them made at once) are their count over the
// window: a Job of twenty pods an hour is twenty arrivals an hour, however
// close together they came.
func arrivalRate(workload string, seen []Sighting, window time.Duration) float64 {
	if strings.HasPrefix(workload, "CronJob/") {
		runs := map[string]time.Time{}
		for _, s := range seen {
			if t, ok := runs[s.Workload]; !ok || s.Created.Before(t) {
				runs[s.Workload] = s.Created
			}
		}
		starts := slices.SortedFunc(maps.Values(runs), time.Time.Compare)
		if span := starts[len(starts)-1].Sub(starts[0]); len(starts) > 1 && span > 0 {
			return float64(len(starts)-1) / span.Seconds() * float64(len(seen)) / float64(len(starts))
		}
	}
	return float64(len(seen)) / window.Seconds()
}

// meanLifetime is how long the pods of seen that left stayed on their
// nodes, on average; zero where none did.
func meanLifetime(seen []Sighting) time.Duration {
	var lived time.Duration
	left := 0
	for _, s := range seen {
		if s.Ended.After(s.Created) {
			lived += s.Ended.Sub(s.Created)
			left++
		}
	}
	if left == 0 {
		return 0
	}
	return lived / time.Duration(left)
}

// meanResyncs is model.PLEGResyncs on average over the pods of seen that
// started and left: each one's start after its creation and its run from
// there to its end. The API says these times in whole seconds, which
// costs nothing on average: a span of x < 1 s between two times of
// unknown phase crosses a second's mark with probability x, as it does
// one of the kubelet's relists, so each pod's term is 0 or 1 and their
// mean the share. Where none says, the pods are taken to start at once
// and run their lifetime.
func meanResyncs(seen []Sighting, lifetime time.Duration) float64 {
	var sum float64
	n := 0
	for _, s := range seen {
		if !s.Started.IsZero() && s.Ended.After(s.Created) {
			sum += model.PLEGResyncs(s.Started.Sub(s.Created), s.Ended.Sub(s.Started))
			n++
		}
	}
	if n == 0 {
		return model.PLEGResyncs(0, lifetime)
	}
	return sum / float64(n)
}

// arrivalsByNode is each node's arrivals, for model.Node.Arrivals: of
// the kubelets' reads, or with driver of the driver's.
func arrivalsByNode(workloads []workloadArrivals, driver bool) map[string][]model.Arrival {
	out := map[string][]model.Arrival{}
	for _, w := range workloads {
		reads := w.reads
		if driver {
			reads = w.driverReads
		}
		for node, rate := range w.byNode {
			for _, o := range reads {
				out[node] = append(out[node], model.Arrival{Object: o, Rate: rate, Lifetime: w.lifetime, Resyncs: w.resyncs})
			}
		}
	}
	return out
}
