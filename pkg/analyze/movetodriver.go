package analyze

import (
	"fmt"
	"slices"

	"github.com/nodeagent-io/nodeagent/pkg/model"
	"github.com/nodeagent-io/nodeagent/pkg/podrefs"
	"github.com/nodeagent-io/nodeagent/pkg/podrefs/inventory"
)

// movePart is one node under move-to-driver, where some pod on it has a
// volume that could move: the kubelet's load and delay groups after the
// move, the driver's part then, what moved, and each group's part.
type movePart struct {
	pods, volumes, subPaths int
	// arriving counts the cluster's workloads whose pods come and go
	// that move (each part counts them all).
	arriving int
	load     kindLoads
	delay    []model.DelayGroup
	driver   *driverPart
	// groups are the namespaces' and workloads' parts, by key, but of the
	// lone ones (groupPart.lone) only the top ones; lone counts them all.
	groups []groupPart
	lone   int
}

// movePart is node now (its pods' reads gathered) with its pods'
// unconverted volumes moved to the driver, c holding the node's pods, for
// a report of top rows.
func (c Cluster) movePart(now model.Node, top int) *movePart {
	moved, m := c.movedToDriver()
	mp := &movePart{pods: m.pods, volumes: m.volumes, subPaths: m.subPaths, arriving: m.arriving}
	n := moved.modelNodes(func(string) Settings { return c.Settings[now.Name] }, moved.podsByNode(), nil)[0]
	n.Gathered = model.GatherReads(n)
	mp.load = loadsOf(n)
	mp.delay = model.DelayGroupsOf(n, model.ShareCounts(n))
	mp.driver = moved.driverPart(now.Name)
	namespaces, workloads := c.moveGroupsOn(now.Name, now.Gathered)
	mp.groups = namespaces
	var lone []groupPart
	for _, g := range workloads {
		if g.lone {
			lone = append(lone, g)
		} else {
			mp.groups = append(mp.groups, g)
		}
	}
	// A bare pod's group is its node's alone: the cluster's top ones are
	// among each node's top ones, and the others only count.
	mp.lone = len(lone)
	slices.SortFunc(lone, func(a, b groupPart) int {
		return compareGroupTotals(keyedTotal{key: a.key, total: a.groupTotal}, keyedTotal{key: b.key, total: b.groupTotal})
	})
	mp.groups = append(mp.groups, lone[:min(top, len(lone))]...)
	mp.groups = slices.Clip(mp.groups)
	slices.SortFunc(mp.groups, func(a, b groupPart) int { return compareGroupKeys(a.key, b.key) })
	return mp
}

// moveToDriver is the what-if "move-to-driver": every configMap volume the
// CSI driver can serve moved to it, as nodeagent convert or the admission
// webhook would move it, and in its Secrets mode (secretsMode) every
// secret volume and projected volume of ConfigMap and Secret sources too.
// The kubelets stop reading those volumes, the driver watches their
// objects instead (Predicted holds both), their
// update delay becomes the driver's, and the subPath mounts of them stop
// being stale (updates: inPlace). By namespace and by workload, the top
// ones. Its Baseline is the kubelets' load now and the driver's now, so
// that the driver's watches already open count on both sides. Where no
// volume can move it says so, and changes nothing.
func (a *Analysis) moveToDriver(top int, secretsMode bool) WhatIf {
	var m moveTally
	var sum, now kindLoads
	var delay []model.DelayGroup
	var drivers, driversNow []*driverPart
	for _, p := range a.inOrder() {
		addKindLoads(&now, p.load)
		driversNow = append(driversNow, p.driver)
		if p.move == nil {
			addKindLoads(&sum, p.load)
			delay = append(delay, p.delay...)
			drivers = append(drivers, p.driver)
			continue
		}
		mp := p.move
		m.pods, m.volumes, m.subPaths, m.touched = m.pods+mp.pods, m.volumes+mp.volumes, m.subPaths+mp.subPaths, m.touched+1
		m.arriving = max(m.arriving, mp.arriving)
		addKindLoads(&sum, mp.load)
		delay = append(delay, mp.delay...)
		drivers = append(drivers, mp.driver)
	}
	baseline := now.kinds()
	if d := sumDrivers(driversNow); d != nil {
		baseline = baseline.plus(d.Predicted)
	}
	words := moveWordsOf(secretsMode)
	if m.volumes == 0 && m.arriving == 0 {
		return WhatIf{Name: "move-to-driver", Description: fmt.Sprintf("no %s that nodeagent's CSI driver can serve%s: nothing would move", words.volume, words.mode),
			Predicted: baseline, Baseline: &baseline}
	}
	w := WhatIf{
		Name: "move-to-driver",
		Description: fmt.Sprintf("the %d %ss of %d pods that nodeagent's CSI driver can serve%s moved to it (nodeagent convert, or the admission webhook), and those of %d workloads' pods that come and go",
			m.volumes, words.volume, m.pods, words.mode, m.arriving),
		Nodes: m.touched, Predicted: sum.kinds(), Baseline: &baseline, ClearsFindings: m.subPaths,
	}
	if d, ok := model.DelayOf(delay); ok {
		w.UpdateDelay = &d
	}
	if d := sumDrivers(drivers); d != nil {
		w.Predicted = w.Predicted.plus(d.Predicted)
		w.DriverUpdateDelay = d.UpdateDelay
	}
	w.MovableNamespaces, w.Namespaces = a.topGroups(top, false)
	w.MovableWorkloads, w.Workloads = a.topGroups(top, true)
	w.Caveat = fmt.Sprintf("the load counts the driver's watches (one per object per node) with the kubelets', and is compared with the kubelets' and the driver's now (baseline); the update delay is the kubelets' for the volumes they keep, the driver's for the moved ones (driverUpdateDelaySeconds); %d subPathNeverUpdated findings go (updates: inPlace); %s",
		m.subPaths, words.stay)
	return w
}

// moveWords are move-to-driver's words for what moves in the driver's
// mode, and what stays.
type moveWords struct{ volume, mode, stay string }

func moveWordsOf(secretsMode bool) moveWords {
	if secretsMode {
		return moveWords{volume: "configMap, secret or projected volume", mode: " in its Secrets mode",
			stay: "environment variables, and projected volumes of other sources (a service account's token), stay as they are"}
	}
	return moveWords{volume: "configMap volume",
		stay: "environment variables, secret and projected volumes stay as they are (--driver-secrets: the driver's Secrets mode moves those volumes too)"}
}

// moveTally counts what movedToDriver moved.
type moveTally struct {
	pods, volumes, subPaths int
	// arriving counts the workloads whose pods come and go that moved.
	arriving int
	// touched counts the nodes of the pods moved.
	touched int
}

// movedToDriver is c with every pod's unconverted volumes (their reads
// and their subPath mounts) made the driver's; pods with none are shared
// with c, the others copied.
func (c Cluster) movedToDriver() (Cluster, moveTally) {
	var m moveTally
	nodes := map[string]bool{}
	inv := *c.Inventory
	inv.Pods = make([]inventory.PodInfo, len(c.Inventory.Pods))
	for i, p := range c.Inventory.Pods {
		inv.Pods[i] = p
		if len(p.Unconverted) == 0 {
			continue
		}
		moving := map[string]bool{}
		for _, v := range p.Unconverted {
			moving[v.Volume] = true
		}
		refs, subPaths := moveRefs(p.Refs, moving)
		inv.Pods[i].Refs, inv.Pods[i].Unconverted = refs, nil
		m.pods, m.volumes, m.subPaths = m.pods+1, m.volumes+len(moving), m.subPaths+subPaths
		nodes[p.Node] = true
	}
	m.touched = len(nodes)
	moved := c
	moved.Inventory = &inv
	moved.arriving, m.arriving = movedArrivals(&inv, c.arriving)
	moved.arrivals, moved.driverArrivals = arrivalsByNode(moved.arriving, false), arrivalsByNode(moved.arriving, true)
	return moved, m
}

// arrivesUnconverted says whether pods that come and go arrive on node
// with volumes that could move to the driver.
func (c Cluster) arrivesUnconverted(node string) bool {
	return slices.ContainsFunc(c.arriving, func(w workloadArrivals) bool { return len(w.unconverted) > 0 && w.byNode[node] > 0 })
}

// movedArrivals is arriving with each workload's pods' unconverted volumes
// made the driver's, as its pods to come would be: the kubelets stop
// reading them at each arrival, and the driver watches them instead.
func movedArrivals(inv *inventory.Inventory, arriving []workloadArrivals) (out []workloadArrivals, moved int) {
	out = slices.Clone(arriving)
	for i, w := range out {
		if len(w.unconverted) == 0 {
			continue
		}
		moving := map[string]bool{}
		for _, v := range w.unconverted {
			moving[v.Volume] = true
		}
		w.refs, _ = moveRefs(w.refs, moving)
		w.unconverted = nil
		w.readsOf(inv, w.workload)
		out[i] = w
		moved++
	}
	return out, moved
}

// moveRefs returns refs with the volumes in moving made driver volumes
// (inPlace where a container mounts part of one), and how many subPath
// mounts of them it dropped.
func moveRefs(refs podrefs.Refs, moving map[string]bool) (podrefs.Refs, int) {
	out := refs
	out.Volumes = nil
	out.DriverVolumes = slices.Clone(refs.DriverVolumes)
	subPathOf := map[string]bool{}
	out.Containers = make([]podrefs.Container, len(refs.Containers))
	dropped := 0
	for i, c := range refs.Containers {
		out.Containers[i] = c
		out.Containers[i].SubPaths = nil
		for _, m := range c.SubPaths {
			if moving[m.Volume] {
				subPathOf[m.Volume] = true
				dropped += len(m.Reads)
				continue
			}
			out.Containers[i].SubPaths = append(out.Containers[i].SubPaths, m)
		}
	}
	for _, v := range refs.Volumes {
		if !moving[v.Name] {
			out.Volumes = append(out.Volumes, v)
			continue
		}
		out.DriverVolumes = append(out.DriverVolumes, podrefs.DriverVolume{Name: v.Name, Reads: v.Reads, InPlace: subPathOf[v.Name]})
	}
	return out, dropped
}
