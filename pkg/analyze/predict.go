package analyze

import (
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/nodeagent-io/nodeagent/pkg/model"
	"github.com/nodeagent-io/nodeagent/pkg/podrefs"
	"github.com/nodeagent-io/nodeagent/pkg/podrefs/inventory"
)

// Cluster is an inventory with every node's settings: what the model
// needs, and what what-ifs change.
type Cluster struct {
	Inventory *inventory.Inventory
	Settings  map[string]Settings
	// DriverSecrets assumes the driver's Secrets mode (drivermode.go):
	// move-to-driver and notConverted count secret and projected volumes
	// too.
	DriverSecrets bool
	// DriverReadsAsPods is the driver reading as the pods (its default):
	// each of its volumes then reads its objects with a quorum GET when
	// published and at each renewal of its pod's token
	// (model.Node.ReadsAsPods), which the driver's load and move-to-driver
	// count.
	DriverReadsAsPods bool
	// arriving are the workloads whose pods arrive on the nodes
	// (WithArrivals) over window, and arrivals each node's arrivals they
	// make.
	arriving []workloadArrivals
	window   time.Duration
	arrivals map[string][]model.Arrival
	// driverArrivals are each node's arrivals of the driver's reads.
	driverArrivals map[string][]model.Arrival
	// passing are the running pods of workloads whose pods finish: the
	// model counts them among the arrivals, not among the pods that stay.
	// passingOn lists them by node.
	passing   map[podKey]bool
	passingOn map[string][]podKey
}

// podKey names a pod.
type podKey struct{ namespace, name string }

// WithArrivals is c with the arrivals of its pods that come and go,
// estimated from sightings (SightingsOf, or what `analyze --serve` saw)
// in the window before now (estimateArrivals): the model then counts what
// they cost beside the steady load.
func (c Cluster) WithArrivals(sightings []Sighting, now time.Time, window time.Duration) Cluster {
	c.window = window
	c.arriving, c.passingOn = estimateArrivals(c.Inventory, movableSightings(sightings, c.DriverSecrets), now, window)
	c.passing = map[podKey]bool{}
	for _, pods := range c.passingOn {
		for _, p := range pods {
			c.passing[p] = true
		}
	}
	c.arrivals, c.driverArrivals = arrivalsByNode(c.arriving, false), arrivalsByNode(c.arriving, true)
	return c
}

// nodeChurn is what of the cluster's arrivals one node's part reads:
// where it changes (an arrival's rate, a pod now passing), the part is
// computed again.
type nodeChurn struct {
	arrivals, driverArrivals []model.Arrival
	passing                  []podKey
	unconverted              bool
}

// churnOn is node's nodeChurn in c.
func (c Cluster) churnOn(node string) nodeChurn {
	return nodeChurn{arrivals: c.arrivals[node], driverArrivals: c.driverArrivals[node], passing: c.passingOn[node],
		unconverted: c.arrivesUnconverted(node)}
}

func (a nodeChurn) equal(b nodeChurn) bool {
	return slices.Equal(a.arrivals, b.arrivals) && slices.Equal(a.driverArrivals, b.driverArrivals) &&
		slices.Equal(a.passing, b.passing) && a.unconverted == b.unconverted
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
			WatchLifetime: s.WatchLifetime(), Gathered: gathered[n.Name], Arrivals: c.arrivals[n.Name],
		})
	}
	return nodes
}

// podsByNode is every pod as the model sees it, by node.
func (c Cluster) podsByNode() map[string][]model.Pod {
	pods := map[string][]model.Pod{}
	for _, p := range c.Inventory.Pods {
		if !c.passing[podKey{p.Namespace, p.Name}] {
			pods[p.Node] = append(pods[p.Node], podrefs.ModelPod(p.Namespace, p.Name, p.Refs, c.Inventory.Exists))
		}
	}
	return pods
}

// namespacesUnlisted is the report's warning where namespaces could not be
// listed.
const namespacesUnlisted = "namespaces could not be listed: notConverted (a pod of a namespace opted in to the admission webhook that the kubelet still serves) is left out; grant list and watch on namespaces (deploy/analyze's nodeagent-analyze role)"

// Predict predicts the cluster's load now and under each what-if, and
// lists the top busiest namespaces and objects. Pods of nodes the
// inventory does not hold are left out.
func Predict(c Cluster, top int) Result {
	a := NewAnalysis(top)
	a.Update(c, c.podsOn(), func(string) bool { return true })
	return a.Result(c)
}

// podsOn is c's inventory's pods by node, in the inventory's order.
func (c Cluster) podsOn() PodsOn {
	byNode := map[string][]inventory.PodInfo{}
	for _, p := range c.Inventory.Pods {
		byNode[p.Node] = append(byNode[p.Node], p)
	}
	return func(node string) []inventory.PodInfo { return byNode[node] }
}

// Result sums the parts into the report of cluster c, whose parts they
// are (Update), with the top ones of each table.
func (a *Analysis) Result(c Cluster) Result {
	top := a.top
	parts := a.inOrder()
	r := Result{Cluster: a.summary(c), Total: Total{Predicted: a.total().kinds()}}
	r.Nodes = make([]NodeResult, len(parts))
	for i, p := range parts {
		r.Nodes[i] = p.result
	}
	sort.SliceStable(r.Nodes, func(i, j int) bool { return busier(r.Nodes[i].Predicted.Sum(), r.Nodes[j].Predicted.Sum()) })
	r.Total.UpdateDelay, r.Total.UpdateDelayNodes = a.clusterDelay()
	r.Namespaces = a.namespaces(top)
	for _, o := range a.topObjects(top, model.CompareObjectLoads, func(model.ObjectLoad) bool { return true }) {
		r.Objects = append(r.Objects, ObjectResult{Kind: o.Object.Kind, Namespace: o.Object.Namespace, Name: o.Object.Name,
			Immutable: o.Object.Immutable, Missing: o.Object.Missing, Nodes: o.Nodes, Predicted: ratesOf(o.Load),
			UpdateDelay: a.objectDelay(o.Object)})
	}
	r.RootCARotation = a.rootCARotation()
	drivers := make([]*driverPart, len(parts))
	for i, p := range parts {
		drivers[i] = p.driver
	}
	r.Driver = sumDrivers(drivers)
	r.WhatIfs = a.whatIfs(top, c.DriverSecrets)
	r.Churn = a.churn(c, top)
	r.Findings = a.findings()
	r.Summary.Findings = countFindings(r.Findings)
	if !c.Inventory.SecretsListed {
		r.Warnings = append(r.Warnings, c.Inventory.SecretsUnlisted)
	}
	if !c.Inventory.NamespacesListed {
		r.Warnings = append(r.Warnings, namespacesUnlisted)
	}
	return r
}

// total is the kubelets' load, summed over the nodes.
func (a *Analysis) total() kindLoads {
	var sum kindLoads
	for _, p := range a.inOrder() {
		addKindLoads(&sum, p.load)
	}
	return sum
}

// topObjects are the top objects that keep holds, by compare: each
// object's load summed over the nodes that read it.
func (a *Analysis) topObjects(top int, compare func(a, b model.ObjectLoad) int, keep func(model.ObjectLoad) bool) []model.ObjectLoad {
	return topOf(top, compare, func(f func(model.ObjectLoad)) {
		a.objectSums.each(func(o model.Object, s objectSum) {
			o.Immutable, o.Missing = s.immutable, s.missing
			if l := (model.ObjectLoad{Object: o, Nodes: s.nodes, Load: s.load}); keep(l) {
				f(l)
			}
		})
	})
}

// clusterDelay is the update delay over every volume read, and the nodes
// where the longest is that long.
func (a *Analysis) clusterDelay() (*model.Delay, []string) {
	var groups []model.DelayGroup
	var slowest []string
	longest := 0.0
	for _, p := range a.inOrder() {
		if len(p.delay) == 0 {
			continue
		}
		groups = append(groups, p.delay...)
		switch {
		case p.bound > longest:
			longest, slowest = p.bound, []string{p.info.Name}
		case p.bound == longest:
			slowest = append(slowest, p.info.Name)
		}
	}
	d, ok := model.DelayOf(groups)
	if !ok {
		return nil, nil
	}
	return &d, slowest
}

// totalDelay is clusterDelay's delay alone.
func (a *Analysis) totalDelay() *model.Delay {
	d, _ := a.clusterDelay()
	return d
}

// objectDelay is the update delay of object o over the nodes whose pods
// mount it: asked of the report's top objects alone, whose groups are
// few where every object's would be many.
func (a *Analysis) objectDelay(o model.Object) *model.Delay {
	var groups []model.DelayGroup
	a.objectSums.contributions(plain(o), func(node string, s objectSum) {
		n := a.parts[node].node
		if k := s.readers.Remounts; k > 0 {
			groups = append(groups, model.DelayGroup{Behaviour: n.Behaviour, SyncFrequency: n.SyncFrequency, TTL: n.TTL, K: k, Weight: k})
		}
	})
	d, ok := model.DelayOf(groups)
	if !ok {
		return nil
	}
	return &d
}

// summary counts the cluster's nodes, pods and namespaces, and its nodes
// by where their settings came from and by behaviour.
func (a *Analysis) summary(c Cluster) Summary {
	s := Summary{Nodes: len(c.Inventory.Nodes), SecretsListed: c.Inventory.SecretsListed, NamespacesListed: c.Inventory.NamespacesListed,
		Behaviours: map[model.Behaviour]int{}}
	for _, p := range a.inOrder() {
		s.Pods += p.pods
		if p.settings.Source == FromConfigz {
			s.NodesFromConfigz++
		}
		s.Behaviours[p.settings.Behaviour()]++
	}
	s.Namespaces = len(a.byNamespace)
	return s
}

// busier orders loads by apiserver GETs, then by watches.
func busier(a, b Rates) bool {
	if a.APIServerGets != b.APIServerGets {
		return a.APIServerGets > b.APIServerGets
	}
	return a.Watches > b.Watches
}

// namespaces are the top namespaces by their objects' load.
func (a *Analysis) namespaces(top int) []NamespaceResult {
	return topOf(top, func(x, y NamespaceResult) int {
		a, b := x.Predicted.Sum(), y.Predicted.Sum()
		if a.APIServerGets != b.APIServerGets || a.Watches != b.Watches {
			if busier(a, b) {
				return -1
			}
			return 1
		}
		return strings.Compare(x.Namespace, y.Namespace)
	}, func(f func(NamespaceResult)) {
		a.namespaceSums.each(func(ns string, l kindLoads) { f(NamespaceResult{Namespace: ns, Predicted: l.kinds()}) })
	})
}
