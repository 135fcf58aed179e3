package analyze

import (
	"fmt"

	"github.com/nodeagent-io/nodeagent/pkg/model"
	"github.com/nodeagent-io/nodeagent/pkg/podrefs"
	"github.com/nodeagent-io/nodeagent/pkg/report"
)

// DriverResult is what nodeagent's CSI driver serves in the cluster and
// what it costs: the pods whose csi volumes name configmaps.nodeagent.io
// (docs/csi.md). It stands apart from the kubelets' load (Total, Nodes,
// WhatIfs), which reads nothing for these volumes and which no what-if of
// the kubelets' settings changes.
type DriverResult struct {
	Pods    int `json:"pods"`
	Volumes int `json:"volumes"`
	Nodes   int `json:"nodes"`
	// Predicted is the driver's load: one watch per ConfigMap per node,
	// immutable ones included, and no GET.
	Predicted Kinds `json:"predicted"`
	// UpdateDelay is the time from an update to its content in the
	// driver's volumes: the median over every volume read, and the longest.
	UpdateDelay *model.Delay `json:"updateDelaySeconds,omitempty"`
	// Failing counts the volumes that keep their pods from starting: a
	// ConfigMap they require is missing, the driver refuses their
	// attributes, or their pod waits for its volumes (no driver on the
	// node, a publish that fails; driverVolumeFailing findings). The
	// kubelet retries their publish calls; the prediction leaves out the
	// first two kinds.
	Failing int `json:"failing"`
	// ConvertedPods counts the pods whose volumes the admission webhook
	// made the driver's (podrefs.ConvertedAnnotation).
	ConvertedPods int `json:"convertedPods,omitempty"`
}

// driverWatchLifetime is the mean life of the driver's watches: client-go's
// reflector picks each watch's timeout between the driver's minimum of
// 30 minutes and twice that, as the kubelet's since v1.31.
var driverWatchLifetime = model.KubeletWatchLifetime(nil)

// driverPart is what the driver serves on one node: its counts, its
// load and its volume reads' delay groups. Nil where no pod on the node
// uses the driver.
type driverPart struct {
	pods, converted, volumes, failing int
	load                              kindLoads
	delay                             []model.DelayGroup
}

// driverPart is the driver's part on node, c holding that node's pods.
func (c Cluster) driverPart(node string) *driverPart {
	d := driverPart{}
	var pods []model.Pod
	registered := c.Inventory.ServesDriver(node)
	for _, p := range c.Inventory.Pods {
		refused := len(p.Refs.RefusedDriverVolumes)
		if (len(p.Refs.DriverVolumes) == 0 && refused == 0) || c.passing[podKey{p.Namespace, p.Name}] {
			continue
		}
		d.pods++
		if p.Converted {
			d.converted++
		}
		d.volumes += refused
		d.failing += refused
		mp := model.Pod{Name: p.Namespace + "/" + p.Name}
		for _, v := range p.Refs.DriverVolumes {
			d.volumes++
			reads, ok := c.driverReads(p.Namespace, v)
			if !ok || p.WaitingForVolumes || !registered {
				d.failing++
			}
			// No driver on the node: no watch, and no update to delay.
			if !ok || !registered {
				continue
			}
			mp.Volumes++
			mp.Reads = append(mp.Reads, reads...)
		}
		pods = append(pods, mp)
	}
	arrivals := c.driverArrivals[node]
	if d.pods == 0 && len(arrivals) == 0 {
		return nil
	}
	// Pods that come and go with driver volumes: the driver's watch opens.
	n := c.driverNode()
	n.Name, n.Pods, n.Arrivals = node, pods, arrivals
	d.load = loadsOf(n)
	d.delay = model.DelayGroupsOf(n, model.ShareCounts(n))
	return &d
}

// sumDrivers sums the driver's parts of nodes, in their order, or
// returns nil where no pod uses the driver.
func sumDrivers(parts []*driverPart) *DriverResult {
	r := DriverResult{}
	var sum kindLoads
	var delay []model.DelayGroup
	for _, d := range parts {
		if d == nil {
			continue
		}
		r.Nodes++
		r.Pods, r.ConvertedPods, r.Volumes, r.Failing = r.Pods+d.pods, r.ConvertedPods+d.converted, r.Volumes+d.volumes, r.Failing+d.failing
		addKindLoads(&sum, d.load)
		delay = append(delay, d.delay...)
	}
	if r.Pods == 0 && sum == (kindLoads{}) {
		return nil
	}
	r.Predicted = sum.kinds()
	if d, ok := model.DelayOf(delay); ok {
		r.UpdateDelay = &d
	}
	return &r
}

// driverReads is what one driver volume keeps a watch on, and false if it
// cannot mount (a required ConfigMap is missing).
func (c Cluster) driverReads(namespace string, v podrefs.DriverVolume) ([]model.Object, bool) {
	var reads []model.Object
	for _, ref := range v.Reads {
		found, immutable, _ := c.Inventory.Exists(ref.Kind, namespace, ref.Name)
		if !found && !ref.Optional {
			return nil, false
		}
		reads = append(reads, model.Object{Kind: ref.Kind, Namespace: namespace, Name: ref.Name, Immutable: immutable, Missing: !found})
	}
	return reads, true
}

// table is the driver's section: what it serves, its load, its delay.
func (d DriverResult) table() report.Table {
	delay := "-"
	if d.UpdateDelay != nil {
		delay = fmt.Sprintf("%.2f s / %.2f s", d.UpdateDelay.Median, d.UpdateDelay.Max)
	}
	sum := d.Predicted.Sum()
	return report.Table{
		Header: []string{"pods", "converted by the webhook", "volumes", "failing", "nodes", "watches", "apiserver GET/s", "update delay (median / longest)"},
		Rows: [][]string{{fmt.Sprint(d.Pods), fmt.Sprint(d.ConvertedPods), fmt.Sprint(d.Volumes), fmt.Sprint(d.Failing), fmt.Sprint(d.Nodes),
			fmt.Sprint(sum.Watches), fmt.Sprintf("%.2f", sum.APIServerGets), delay}},
	}
}
