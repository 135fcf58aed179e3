package analyze

import (
	"sort"
	"sync"

	"github.com/nodeagent-io/nodeagent/pkg/model"
	"github.com/nodeagent-io/nodeagent/pkg/podrefs"
	"github.com/nodeagent-io/nodeagent/pkg/podrefs/inventory"
)

// Cluster is an inventory with every node's settings: what the model
// needs, and what what-ifs change.
type Cluster struct {
	Inventory *inventory.Inventory
	Settings  map[string]Settings
}

// modelNodes describes the cluster's nodes to the load model, each with
// settings from settingsOf (the cluster's own, or a what-if's), in the
// inventory's order. Pods on nodes the inventory does not hold are left
// out.
func (c Cluster) modelNodes(settingsOf func(name string) Settings, pods map[string][]model.Pod, gathered map[string]*model.Reads) []model.Node {
	nodes := make([]model.Node, 0, len(c.Inventory.Nodes))
	for _, n := range c.Inventory.Nodes {
		s := settingsOf(n.Name)
		nodes = append(nodes, model.Node{
			Name: n.Name, Pods: pods[n.Name],
			SyncFrequency: s.SyncFrequency, TTL: s.TTL, Behaviour: s.Behaviour(),
			WatchLifetime: s.WatchLifetime(), Gathered: gathered[n.Name],
		})
	}
	return nodes
}

// gatherReads gathers each node's pods' reads once, for the prediction and
// the what-ifs that keep the pods as they are.
func gatherReads(nodes []model.Node) map[string]*model.Reads {
	out := make(map[string]*model.Reads, len(nodes))
	for _, n := range nodes {
		out[n.Name] = model.GatherReads(n)
	}
	return out
}

// podsByNode is every pod as the model sees it, by node.
func (c Cluster) podsByNode() map[string][]model.Pod {
	pods := map[string][]model.Pod{}
	for _, p := range c.Inventory.Pods {
		pods[p.Node] = append(pods[p.Node], podrefs.ModelPod(p.Namespace, p.Name, p.Refs, c.Inventory.Exists))
	}
	return pods
}

// namespacesUnlisted is the report's warning where namespaces could not be
// listed.
const namespacesUnlisted = "namespaces could not be listed: notConverted (a pod of a namespace opted in to the admission webhook that the kubelet still serves) is left out; grant list and watch on namespaces (deploy/analyze's nodeagent-analyze role)"

// Predict predicts the cluster's load now and under each what-if, and
// lists the top busiest namespaces and objects.
func Predict(c Cluster, top int) Result {
	// The findings, the what-ifs and the rest read c and nothing of each
	// other's: on a large cluster they take seconds each, side by side.
	var parts sync.WaitGroup
	var findings []Finding
	parts.Go(func() { findings = c.findings() })
	pods := c.podsByNode()
	now := c.modelNodes(func(name string) Settings { return c.Settings[name] }, pods, nil)
	gathered := gatherReads(now)
	for i := range now {
		now[i].Gathered = gathered[now[i].Name]
	}
	p := model.Predict(now)
	r := Result{
		Cluster: c.summary(),
		Total:   Total{Predicted: kindsOf(p.ByKind)},
	}
	shares := make(map[string]map[int]int, len(now))
	for _, n := range now {
		shares[n.Name] = model.ShareCounts(n)
	}
	var whatIfsPredicted []WhatIf
	parts.Go(func() { whatIfsPredicted = whatIfs(c, pods, gathered, p, shares, top) })
	r.Nodes = c.nodeResults(now, p, shares)
	r.Total.UpdateDelay, r.Total.UpdateDelayNodes = clusterDelay(now, shares)
	r.Namespaces = namespaces(p.Objects, top)
	topObjects := p.Objects[:min(top, len(p.Objects))]
	delays := objectDelays(now, topObjects)
	for _, o := range topObjects {
		r.Objects = append(r.Objects, ObjectResult{Kind: o.Object.Kind, Namespace: o.Object.Namespace, Name: o.Object.Name,
			Immutable: o.Object.Immutable, Missing: o.Object.Missing, Nodes: o.Nodes, Predicted: ratesOf(o.Load),
			UpdateDelay: delays(o.Object)})
	}
	r.RootCARotation = rootCARotation(now)
	r.Driver = c.driverResult()
	parts.Wait()
	r.WhatIfs, r.Findings = whatIfsPredicted, findings
	r.Summary.Findings = countFindings(r.Findings)
	if !c.Inventory.SecretsListed {
		r.Warnings = append(r.Warnings, c.Inventory.SecretsUnlisted)
	}
	if !c.Inventory.NamespacesListed {
		r.Warnings = append(r.Warnings, namespacesUnlisted)
	}
	return r
}

// clusterDelay is the update delay over every volume read of nodes, and
// the nodes where the longest is that long; shares are each node's
// model.ShareCounts.
func clusterDelay(nodes []model.Node, shares map[string]map[int]int) (*model.Delay, []string) {
	var groups []model.DelayGroup
	var slowest []string
	longest := 0.0
	for _, n := range nodes {
		g := model.DelayGroupsOf(n, shares[n.Name])
		if len(g) == 0 {
			continue
		}
		groups = append(groups, g...)
		switch bound := model.UpdateBound(n.Behaviour, n.SyncFrequency, n.TTL); {
		case bound > longest:
			longest, slowest = bound, []string{n.Name}
		case bound == longest:
			slowest = append(slowest, n.Name)
		}
	}
	d, ok := model.DelayOf(groups)
	if !ok {
		return nil, nil
	}
	sort.Strings(slowest)
	return &d, slowest
}

// objectDelays returns the update delay of each of objects over the nodes
// whose pods mount it: the report's top objects, not every object, whose
// groups a large cluster would spend seconds on.
func objectDelays(nodes []model.Node, objects []model.ObjectLoad) func(model.Object) *model.Delay {
	groups := make(map[model.Object][]model.DelayGroup, len(objects))
	for _, o := range objects {
		groups[plain(o.Object)] = nil
	}
	for _, n := range nodes {
		n.EachReaderCount(func(o model.Object, k int) {
			if g, wanted := groups[o]; wanted {
				groups[o] = append(g, model.DelayGroup{Behaviour: n.Behaviour, SyncFrequency: n.SyncFrequency, TTL: n.TTL, K: k, Weight: k})
			}
		})
	}
	return func(o model.Object) *model.Delay {
		d, ok := model.DelayOf(groups[plain(o)])
		if !ok {
			return nil
		}
		return &d
	}
}

func (c Cluster) summary() Summary {
	s := Summary{Nodes: len(c.Inventory.Nodes), Pods: len(c.Inventory.Pods),
		SecretsListed: c.Inventory.SecretsListed, NamespacesListed: c.Inventory.NamespacesListed, Behaviours: map[model.Behaviour]int{}}
	namespaces := map[string]bool{}
	for _, p := range c.Inventory.Pods {
		namespaces[p.Namespace] = true
	}
	s.Namespaces = len(namespaces)
	for _, n := range c.Inventory.Nodes {
		settings := c.Settings[n.Name]
		if settings.Source == FromConfigz {
			s.NodesFromConfigz++
		}
		s.Behaviours[settings.Behaviour()]++
	}
	return s
}

// nodeResults is every node's settings and load, the busiest first.
func (c Cluster) nodeResults(nodes []model.Node, p model.Prediction, shares map[string]map[int]int) []NodeResult {
	out := make([]NodeResult, len(nodes))
	for i, n := range nodes {
		s := c.Settings[n.Name]
		out[i] = NodeResult{
			Name: n.Name, KubeletVersion: s.KubeletVersion, Strategy: s.Strategy,
			SyncFrequencySeconds: s.SyncFrequency.Seconds(), TTLSeconds: s.TTL.Seconds(),
			SettingsSource: s.Source, Behaviour: n.Behaviour, Pods: len(n.Pods),
			Predicted: kindsOf(p.Nodes[i].ByKind), Notes: s.Notes,
		}
		if d, ok := model.DelayOf(model.DelayGroupsOf(n, shares[n.Name])); ok {
			out[i].UpdateDelay = &d
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return busier(out[i].Predicted.Sum(), out[j].Predicted.Sum()) })
	return out
}

// busier orders loads by apiserver GETs, then by watches.
func busier(a, b Rates) bool {
	if a.APIServerGets != b.APIServerGets {
		return a.APIServerGets > b.APIServerGets
	}
	return a.Watches > b.Watches
}

// namespaces sums the objects' load by namespace and keeps the top.
func namespaces(objects []model.ObjectLoad, top int) []NamespaceResult {
	byNamespace := map[string]model.ByKind{}
	for _, o := range objects {
		b := byNamespace[o.Object.Namespace]
		if b == nil {
			b = model.ByKind{}
			byNamespace[o.Object.Namespace] = b
		}
		l := b[o.Object.Kind]
		l.Add(o.Load)
		b[o.Object.Kind] = l
	}
	out := make([]NamespaceResult, 0, len(byNamespace))
	for ns, b := range byNamespace {
		out = append(out, NamespaceResult{Namespace: ns, Predicted: kindsOf(b)})
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].Predicted.Sum(), out[j].Predicted.Sum()
		if a.APIServerGets != b.APIServerGets || a.Watches != b.Watches {
			return busier(a, b)
		}
		return out[i].Namespace < out[j].Namespace
	})
	return out[:min(top, len(out))]
}
