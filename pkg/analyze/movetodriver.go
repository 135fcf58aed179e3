package analyze

import (
	"fmt"
	"slices"

	"github.com/nodeagent-io/nodeagent/pkg/model"
	"github.com/nodeagent-io/nodeagent/pkg/podrefs"
	"github.com/nodeagent-io/nodeagent/pkg/podrefs/inventory"
)

// moveToDriver is the what-if "move-to-driver": every configMap volume the
// CSI driver can serve moved to it, as nodeagent convert or the admission
// webhook would move it. The kubelets stop reading those volumes, the
// driver watches their ConfigMaps instead (Predicted holds both), their
// update delay becomes the driver's, and the subPath mounts of them stop
// being stale (updates: inPlace). By namespace and by workload, the top
// ones (breakDown). Nil where no volume can move.
func (c Cluster) moveToDriver(shares map[string]map[int]int, gathered map[string]*model.Reads, top int) *WhatIf {
	if !slices.ContainsFunc(c.Inventory.Pods, func(p inventory.PodInfo) bool { return len(p.Unconverted) > 0 }) {
		return nil // no copy of the inventory for nothing
	}
	moved, m := c.movedToDriver()
	if m.volumes == 0 {
		return nil
	}
	nodes := moved.modelNodes(func(name string) Settings { return c.Settings[name] }, moved.podsByNode(), nil)
	_, byKind := model.Totals(nodes)
	delay, _ := clusterDelay(nodes, shares)
	w := &WhatIf{
		Name: "move-to-driver",
		Description: fmt.Sprintf("the %d configMap volumes of %d pods that nodeagent's CSI driver can serve moved to it (nodeagent convert, or the admission webhook)",
			m.volumes, m.pods),
		Nodes: len(m.nodes), Predicted: kindsOf(byKind), UpdateDelay: delay, ClearsFindings: m.subPaths,
	}
	if d := moved.driverResult(); d != nil {
		w.Predicted = w.Predicted.plus(d.Predicted)
		w.DriverUpdateDelay = d.UpdateDelay
	}
	c.breakDown(w, gathered, top)
	w.Caveat = fmt.Sprintf("the load counts the driver's watches (one per ConfigMap per node) with the kubelets'; the update delay is the kubelets' for the volumes they keep, the driver's for the moved ones; %d subPathNeverUpdated findings go (updates: inPlace); environment variables and projected volumes stay as they are",
		m.subPaths)
	return w
}

// moveTally counts what movedToDriver moved.
type moveTally struct {
	pods, volumes, subPaths int
	nodes                   map[string]bool
}

// movedToDriver is c with every pod's unconverted volumes (their reads
// and their subPath mounts) made the driver's; pods with none are shared
// with c, the others copied.
func (c Cluster) movedToDriver() (Cluster, moveTally) {
	m := moveTally{nodes: map[string]bool{}}
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
		m.nodes[p.Node] = true
	}
	moved := c
	moved.Inventory = &inv
	return moved, m
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
