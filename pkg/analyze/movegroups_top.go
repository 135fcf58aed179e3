package analyze

import (
	"cmp"

	"github.com/nodeagent-io/nodeagent/pkg/model"
)

// The top groups of move-to-driver: every group's total from the sums by
// group, and from the parts for the lone ones (groupPart.lone), ranked;
// the kept ones' delays over their nodes.

// topGroups counts the namespaces' groups (or the workloads') and returns
// the top ones, each with its volume reads' delays over its nodes.
func (a *Analysis) topGroups(top int, workloads bool) (int, []MoveGroup) {
	count := 0
	kept := topOf(top, compareGroupTotals, func(f func(keyedTotal)) {
		a.groupSums.each(func(k groupKey, t groupTotal) {
			if (k.workload != "") == workloads {
				count++
				f(keyedTotal{key: k, total: t})
			}
		})
		if workloads {
			count += a.eachLoneGroup(func(p *nodePart, g *groupPart) { f(keyedTotal{key: g.key, total: g.groupTotal, lone: p}) })
		}
	})
	rows := make([]MoveGroup, len(kept))
	for i, g := range kept {
		rows[i] = g.total.row(g.key)
	}
	for i, kt := range kept {
		k := kt.key
		var kubelet, driver []model.DelayGroup
		for _, p := range a.contributingParts(kt) {
			g := p.group(k)
			for _, s := range g.kubeletDelay {
				kubelet = append(kubelet, model.DelayGroup{Behaviour: p.node.Behaviour, SyncFrequency: p.node.SyncFrequency, TTL: p.node.TTL, K: int(s.k), Weight: int(s.weight)})
			}
			for _, s := range g.driverDelay {
				driver = append(driver, model.DelayGroup{Behaviour: model.Driver, K: int(s.k), Weight: int(s.weight)})
			}
		}
		if d, ok := model.DelayOf(kubelet); ok {
			rows[i].UpdateDelay = &d
		}
		if d, ok := model.DelayOf(driver); ok {
			rows[i].MovedUpdateDelay = &d
		}
	}
	return count, rows
}

// keyedTotal is one group's total; lone is the part of a lone group
// (groupPart.lone), nil for another.
type keyedTotal struct {
	key   groupKey
	total groupTotal
	lone  *nodePart
}

// eachLoneGroup calls f with every lone group (groupPart.lone) that a
// part keeps and its node's part, in no order, and returns how many lone
// groups there are.
func (a *Analysis) eachLoneGroup(f func(*nodePart, *groupPart)) int {
	count := 0
	for _, p := range a.parts {
		if p.move == nil {
			continue
		}
		count += p.move.lone
		for i := range p.move.groups {
			if g := &p.move.groups[i]; g.lone {
				f(p, g)
			}
		}
	}
	return count
}

// contributingParts are the parts that contribute to t's group, by node
// name.
func (a *Analysis) contributingParts(t keyedTotal) []*nodePart {
	if t.lone != nil {
		return []*nodePart{t.lone}
	}
	nodes := a.groupSums.nodesOf(t.key)
	parts := make([]*nodePart, len(nodes))
	for i, node := range nodes {
		parts[i] = a.parts[node]
	}
	return parts
}

// compareGroupTotals puts the group whose move saves the kubelets' most
// GETs first, then most watches, then most findings cleared, then by name.
func compareGroupTotals(a, b keyedTotal) int {
	x, y := a.total.saved, b.total.saved
	xGets, yGets := x.configMaps.APIServerGetQPS+x.secrets.APIServerGetQPS, y.configMaps.APIServerGetQPS+y.secrets.APIServerGetQPS
	return cmp.Or(cmp.Compare(yGets, xGets), cmp.Compare(y.configMaps.Watches+y.secrets.Watches, x.configMaps.Watches+x.secrets.Watches),
		cmp.Compare(b.total.clears, a.total.clears), cmp.Compare(a.key.namespace, b.key.namespace), cmp.Compare(a.key.workload, b.key.workload))
}
