package analyze

import (
	"slices"

	"github.com/nodeagent-io/nodeagent/pkg/model"
	"github.com/nodeagent-io/nodeagent/pkg/podrefs/inventory"
)

// nodePart is everything the analysis computes from one node alone: from
// its settings, its pods and what the inventory knows of the objects they
// reference. The cluster's result is a sum of parts (Analysis), so that a
// change recomputes the parts of the nodes it touches and nothing else.
// A part holds no pod: what the totals need of them is summed here.
type nodePart struct {
	info     inventory.NodeInfo
	settings Settings
	// node is the node as the model sees it, without its pods.
	node model.Node
	pods int
	// namespaces are its pods' namespaces; refs the objects they
	// reference, present or not, that objects does not hold (the
	// environment's, the driver's): with objects, those whose change
	// recomputes the part.
	namespaces []string
	refs       []objectKey
	// objects are the loads of the objects its kubelet reads, by object
	// (compareObjects); namespaceLoads, their sums by namespace.
	objects        []objectRead
	namespaceLoads []namespaceLoad
	load           kindLoads
	// delay are its volume reads' delay groups; bound their longest delay,
	// where it has any.
	delay   []model.DelayGroup
	bound   float64
	result  NodeResult
	whatIfs [len(settingsWhatIfs)]whatIfPart
	rootCA  rotationPart
	// findings are its pods' findings in the report's order, until the
	// Analysis hands them to its findingOrder, which keeps them.
	findings   []Finding
	recreated  []Finding
	driver     *driverPart
	move       *movePart
	unconverts bool
	// churn is what of the cluster's arrivals the part was computed with.
	churn nodeChurn
}

// objectKey names one object, as the inventory keys it.
type objectKey struct {
	kind            model.Kind
	namespace, name string
}

// objectRead is one object a node's kubelet reads: with the flags the
// node knows, and its readers there (of which its load follows: loadOn).
// A large cluster has hundreds of thousands: kept small.
type objectRead struct {
	object            model.Object
	remounts, retries int32
	// arrivals, occupancy and resyncs are its arriving pods'
	// (model.Readers).
	arrivals, occupancy, resyncs float32
}

func (r objectRead) readers() model.Readers {
	return model.Readers{Remounts: int(r.remounts), Retries: int(r.retries), Arrivals: float64(r.arrivals), Occupancy: float64(r.occupancy),
		Resyncs: float64(r.resyncs)}
}

// loadOn is r's load on node n.
func (r objectRead) loadOn(n model.Node) model.Load { return model.LoadOf(n, r.object, r.readers()) }

// whatIfPart is one node under a what-if of its settings.
type whatIfPart struct {
	touched bool
	load    kindLoads
	delay   []model.DelayGroup
}

// newNodePart computes the part of node n, whose pods are pods (sorted
// by namespace and name), in cluster c, for a report of top rows.
func (c Cluster) newNodePart(n inventory.NodeInfo, pods []inventory.PodInfo, top int) *nodePart {
	pods = c.movablePods(pods)
	local := c
	local.Inventory = c.Inventory.OfNode(n, pods)
	s := c.Settings[n.Name]
	p := &nodePart{info: n, settings: s, pods: len(pods), churn: c.churnOn(n.Name)}
	modelPods := local.podsByNode()[n.Name]
	full := local.modelNodes(func(string) Settings { return s }, map[string][]model.Pod{n.Name: modelPods}, nil)[0]
	full.Gathered = model.GatherReads(full)
	p.node = full
	p.node.Pods, p.node.Gathered = nil, nil
	full.Gathered.Each(func(o model.Object, rs model.Readers) {
		l := model.LoadOf(full, o, rs)
		p.objects = append(p.objects, objectRead{object: o, remounts: int32(rs.Remounts), retries: int32(rs.Retries),
			arrivals: float32(rs.Arrivals), occupancy: float32(rs.Occupancy), resyncs: float32(rs.Resyncs)})
		p.load.add(o.Kind, l)
	})
	slices.SortFunc(p.objects, func(a, b objectRead) int { return compareObjects(a.object, b.object) })
	p.namespaceLoads = namespaceLoadsOf(p.node, p.objects)
	shares := model.ShareCounts(full)
	p.delay = model.DelayGroupsOf(full, shares)
	if len(shares) > 0 {
		p.bound = model.UpdateBound(full.Behaviour, full.SyncFrequency, full.TTL)
	}
	p.result = c.nodeResult(full, p.load, shares)
	for i, w := range settingsWhatIfs {
		p.whatIfs[i] = settingsWhatIf(full, s, w.change, shares)
	}
	p.rootCA = rotationOf(full)
	p.namespaces, p.refs = referenced(pods, p.objects)
	var found []Finding
	for _, pod := range pods {
		found = append(found, local.podFindings(pod)...)
	}
	p.findings = nodeFindings(found)
	p.recreated = local.immutableRecreated()
	p.driver = local.driverPart(n.Name)
	p.unconverts = slices.ContainsFunc(pods, func(p inventory.PodInfo) bool { return len(p.Unconverted) > 0 }) ||
		c.arrivesUnconverted(n.Name)
	if p.unconverts {
		p.move = local.movePart(full, top)
	}
	return p
}

// settingsWhatIf is node n (with its reads gathered) after change of its
// settings s; shares are its model.ShareCounts.
func settingsWhatIf(n model.Node, s Settings, change func(Settings) (Settings, bool), shares map[int]int) whatIfPart {
	changed, touched := change(s)
	n.SyncFrequency, n.TTL = changed.SyncFrequency, changed.TTL
	n.Behaviour, n.WatchLifetime = changed.Behaviour(), changed.WatchLifetime()
	return whatIfPart{touched: touched, load: loadsOf(n), delay: model.DelayGroupsOf(n, shares)}
}

// referenced are the namespaces of pods and the objects they reference
// but read (objects, by object), each once.
func referenced(pods []inventory.PodInfo, read []objectRead) ([]string, []objectKey) {
	namespaces := map[string]bool{}
	refs := map[objectKey]bool{}
	for _, p := range pods {
		namespaces[p.Namespace] = true
		p.Refs.EachRef(func(r model.Kind, name string) { refs[objectKey{r, p.Namespace, name}] = true })
	}
	nsList := make([]string, 0, len(namespaces))
	for ns := range namespaces {
		nsList = append(nsList, ns)
	}
	slices.Sort(nsList)
	var refList []objectKey
	for k := range refs {
		o := model.Object{Kind: k.kind, Namespace: k.namespace, Name: k.name}
		if _, found := slices.BinarySearchFunc(read, o, func(r objectRead, o model.Object) int { return compareObjects(r.object, o) }); !found {
			refList = append(refList, k)
		}
	}
	return nsList, refList
}

// nodeResult is node n's row: its settings, its load, its delay.
func (c Cluster) nodeResult(n model.Node, load kindLoads, shares map[int]int) NodeResult {
	s := c.Settings[n.Name]
	r := NodeResult{
		Name: n.Name, KubeletVersion: s.KubeletVersion, Strategy: s.Strategy,
		SyncFrequencySeconds: s.SyncFrequency.Seconds(), TTLSeconds: s.TTL.Seconds(),
		SettingsSource: s.Source, Behaviour: n.Behaviour, Pods: len(n.Pods),
		Predicted: load.kinds(), Notes: s.Notes,
	}
	if d, ok := model.DelayOf(model.DelayGroupsOf(n, shares)); ok {
		r.UpdateDelay = &d
	}
	return r
}
