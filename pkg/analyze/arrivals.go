package analyze

import (
	"cmp"
	"regexp"
	"slices"
	"time"

	"github.com/nodeagent-io/nodeagent/pkg/model"
	"github.com/nodeagent-io/nodeagent/pkg/podrefs"
	"github.com/nodeagent-io/nodeagent/pkg/podrefs/inventory"
)

// ArrivalWindow is how far back analyze counts pods' arrivals: long
// enough for a CronJob of every few minutes, short enough that last
// week's rollout is not churn.
const ArrivalWindow = time.Hour

// sighting is one pod the inventory saw, running or finished: where and
// when it arrived, whether and when it ended, and what its volumes read.
type sighting struct {
	node           string
	created, ended time.Time
	finished       bool
	refs           podrefs.Refs
	unconverted    []inventory.UnconvertedVolume
	name           string
}

// workloadArrivals is one workload's pods arriving on the cluster's
// nodes, as estimated from its pods' creation times.
type workloadArrivals struct {
	namespace, workload string
	// rate is its pods a second, over all nodes; byNode splits it.
	rate     float64
	byNode   map[string]float64
	lifetime time.Duration
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

// estimateArrivals estimates, from the creation times of the pods inv
// lists, the arrivals of each workload whose pods finish (a Job's, a
// CronJob's: some of its pods in the window are listed finished): the rate
// of its pods seen in the window, from its first one's creation to its
// last one's ((n − 1) over that span; one pod, one a window), each there
// as long as its finished pods stayed on average. Its running pods are
// passing: the arrivals count them, and the pods that stay do not.
//
// The API lists a finished pod until its Job is cleaned up (a CronJob
// keeps its last three), so the span is what the API still shows; a Job
// cleaned up at once shows nothing finished, and is not counted. Nor are
// the pods a rollout replaced, which the API no longer lists: a new pod of
// a Deployment looks the same whether the Deployment is new or rolled.
func estimateArrivals(inv *inventory.Inventory, now time.Time, window time.Duration) (out []workloadArrivals, passing map[podKey]bool) {
	type key struct{ namespace, workload string }
	groups := map[key][]sighting{}
	for _, p := range inv.Pods {
		if now.Sub(p.Created) <= window {
			k := key{p.Namespace, arrivalWorkload(p.Workload)}
			groups[k] = append(groups[k], sighting{node: p.Node, created: p.Created, refs: p.Refs, unconverted: p.Unconverted, name: p.Name})
		}
	}
	for _, p := range inv.Finished {
		if now.Sub(p.Created) <= window {
			k := key{p.Namespace, arrivalWorkload(p.Workload)}
			groups[k] = append(groups[k], sighting{node: p.Node, created: p.Created, ended: p.Ended, finished: true,
				refs: p.Refs, unconverted: p.Unconverted, name: p.Name})
		}
	}
	passing = map[podKey]bool{}
	for k, seen := range groups {
		w := workloadArrivals{namespace: k.namespace, workload: k.workload, byNode: map[string]float64{}}
		var finishes bool
		w.rate, w.lifetime, finishes = rateAndLifetime(seen, window)
		if !finishes {
			continue
		}
		for _, s := range seen {
			w.byNode[s.node] += w.rate / float64(len(seen))
		}
		newest := slices.MaxFunc(seen, func(a, b sighting) int { return a.created.Compare(b.created) })
		w.refs, w.unconverted = newest.refs, newest.unconverted
		w.readsOf(inv, newest.name)
		if len(w.reads) == 0 && len(w.driverReads) == 0 {
			continue
		}
		out = append(out, w)
		for _, s := range seen {
			if !s.finished {
				passing[podKey{k.namespace, s.name}] = true
			}
		}
	}
	slices.SortFunc(out, func(a, b workloadArrivals) int {
		return cmp.Or(cmp.Compare(a.namespace, b.namespace), cmp.Compare(a.workload, b.workload))
	})
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

// rateAndLifetime is one workload's arrival rate and its pods' mean time
// on their nodes, from its sightings in the window; finishes is false
// where none of them finished, and the rest is then meaningless.
func rateAndLifetime(seen []sighting, window time.Duration) (rate float64, lifetime time.Duration, finishes bool) {
	var lived time.Duration
	finished := 0
	for _, s := range seen {
		if s.finished && !s.ended.IsZero() && s.ended.After(s.created) {
			lived += s.ended.Sub(s.created)
			finished++
		}
	}
	if finished == 0 {
		return 0, 0, false
	}
	first := slices.MinFunc(seen, func(a, b sighting) int { return a.created.Compare(b.created) }).created
	last := slices.MaxFunc(seen, func(a, b sighting) int { return a.created.Compare(b.created) }).created
	rate = 1 / window.Seconds()
	if span := last.Sub(first); len(seen) > 1 && span > 0 {
		rate = float64(len(seen)-1) / span.Seconds()
	}
	return rate, lived / time.Duration(finished), true
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
				out[node] = append(out[node], model.Arrival{Object: o, Rate: rate, Lifetime: w.lifetime})
			}
		}
	}
	return out
}
