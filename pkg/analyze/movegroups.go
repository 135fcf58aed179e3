package analyze

import (
	"cmp"
	"slices"
	"sync"

	"github.com/nodeagent-io/nodeagent/pkg/model"
	"github.com/nodeagent-io/nodeagent/pkg/podrefs"
	"github.com/nodeagent-io/nodeagent/pkg/podrefs/inventory"
)

// MoveGroup is what moving one namespace's, or one workload's, configMap
// volumes to the driver would change, that group alone moving: the
// kubelets' load that goes, the driver's that comes, and the update delay
// of the moved volume reads before and after.
type MoveGroup struct {
	Namespace string `json:"namespace"`
	// Workload is what created the pods (inventory.WorkloadOf); empty in
	// a namespace's row.
	Workload string `json:"workload,omitempty"`
	Pods     int    `json:"pods"`
	Volumes  int    `json:"volumes"`
	// KubeletsSaved is the kubelets' load that goes; DriverAdded, the
	// driver's that comes (a watch per ConfigMap per node where the driver
	// did not watch it yet).
	KubeletsSaved Kinds `json:"kubeletsSaved"`
	DriverAdded   Kinds `json:"driverAdded"`
	// UpdateDelay is the moved volume reads' delay as the kubelets serve
	// them; MovedUpdateDelay, as the driver would.
	UpdateDelay      *model.Delay `json:"updateDelaySeconds,omitempty"`
	MovedUpdateDelay *model.Delay `json:"movedUpdateDelaySeconds,omitempty"`
	// ClearsFindings counts the subPathNeverUpdated findings that go.
	ClearsFindings int `json:"clearsFindings"`
}

// moveRead is one group's reads of one object on one node through the
// volumes that would move: the kubelet's reads that go, and the driver
// volume reads that would come. Nodes and objects are numbered
// (moveGroups.nodes, objects): a large cluster has hundreds of thousands
// of these to sort, and integers sort fast.
type moveRead struct {
	namespaceGroup, workloadGroup int
	node, object                  int
	kubelet                       model.Readers
	driver                        int
}

// moveGroups is the breakdown of move-to-driver by namespace and by
// workload: every group's load change, and the top of each by the
// kubelets' GETs saved with their delays.
type moveGroups struct {
	c        Cluster
	gathered map[string]*model.Reads
	reads    []moveRead
	// nodeIndex numbers the inventory's nodes; objects are the objects
	// read, numbered by objectIndex.
	nodeIndex   map[string]int
	objects     []model.Object
	objectIndex map[model.Object]int
	// driverNow counts, by node, the driver's volume reads of each object.
	driverNow map[int]map[int]int
	// now caches nodeNow by node.
	now map[int][]nodeObject
	// namespaces and workloads are every group, by index; lone says which
	// workloads are one pod that nothing owns (groupPart.lone).
	namespaces, workloads []MoveGroup
	lone                  []bool
	// namespaceIndex and workloadIndex place groups in namespaces and
	// workloads.
	namespaceIndex map[string]int
	workloadIndex  map[[2]string]int
}

// groupPart is one group's share on one node: what its move changes
// there, and the shares of its volume reads, as the kubelet serves them and
// as the driver would, of which their update delays follow.
type groupPart struct {
	key groupKey
	groupTotal
	kubeletDelay, driverDelay []shareWeight
	// lone: the group is one pod that nothing owns (its workload is
	// Pod/<its name>), which no other node can hold. Its total is this
	// part: it is kept out of Analysis.groupSums, where most of a cluster
	// of bare pods' groups would be a sum of one.
	lone bool
}

// groupTotal is what a group's move changes, on one node or summed: its
// pods, volumes and the subPath findings it clears, the kubelets' load that
// goes and the driver's that comes.
type groupTotal struct {
	pods, volumes, clears int32
	saved, added          kindLoads
}

// shareWeight is weight volume reads that share one cached copy k ways.
type shareWeight struct{ k, weight int32 }

// addShare adds weight reads shared k ways to shares.
func addShare(shares []shareWeight, k, weight int) []shareWeight {
	if weight == 0 {
		return shares
	}
	for i := range shares {
		if shares[i].k == int32(k) {
			shares[i].weight += int32(weight)
			return shares
		}
	}
	return append(shares, shareWeight{int32(k), int32(weight)})
}

func addGroupTotal(total *groupTotal, v groupTotal) {
	total.pods, total.volumes, total.clears = total.pods+v.pods, total.volumes+v.volumes, total.clears+v.clears
	addKindLoads(&total.saved, v.saved)
	addKindLoads(&total.added, v.added)
}

// row is the report's row of group k, whose total t is.
func (t groupTotal) row(k groupKey) MoveGroup {
	return MoveGroup{Namespace: k.namespace, Workload: k.workload, Pods: int(t.pods), Volumes: int(t.volumes), ClearsFindings: int(t.clears),
		KubeletsSaved: t.saved.kinds(), DriverAdded: t.added.kinds()}
}

// moveGroupsOn is every group's part on the one node c holds, whose pods'
// reads are gathered.
func (c Cluster) moveGroupsOn(node string, gathered *model.Reads) (namespaces, workloads []groupPart) {
	g := moveScratches.Get().(*moveGroups)
	defer moveScratches.Put(g)
	g.reset()
	g.c, g.gathered[node], g.nodeIndex[node] = c, gathered, 0
	g.collect()
	namespaces = g.sum(g.namespaces, func(m moveRead) int { return m.namespaceGroup })
	workloads = g.sum(g.workloads, func(m moveRead) int { return m.workloadGroup })
	for i := range workloads {
		workloads[i].lone = g.lone[i]
	}
	return namespaces, workloads
}

// moveScratches are moveGroupsOn's scratch memory, kept from node to node:
// a part's groups are recomputed with it, and maps grown afresh for each
// were much of a computation's garbage.
var moveScratches = sync.Pool{New: func() any {
	return &moveGroups{gathered: map[string]*model.Reads{}, nodeIndex: map[string]int{}, objectIndex: map[model.Object]int{},
		driverNow: map[int]map[int]int{}, now: map[int][]nodeObject{}, namespaceIndex: map[string]int{}, workloadIndex: map[[2]string]int{}}
}}

// reset empties g for another node, keeping its memory.
func (g *moveGroups) reset() {
	g.c = Cluster{}
	clear(g.gathered)
	clear(g.nodeIndex)
	clear(g.objectIndex)
	clear(g.driverNow)
	clear(g.now)
	clear(g.namespaceIndex)
	clear(g.workloadIndex)
	g.reads, g.objects, g.namespaces, g.workloads, g.lone = g.reads[:0], g.objects[:0], g.namespaces[:0], g.workloads[:0], g.lone[:0]
}

// sum computes each of groups' load change and shares.
func (g *moveGroups) sum(groups []MoveGroup, groupOf func(moveRead) int) []groupPart {
	parts := make([]groupPart, len(groups))
	for i, m := range groups {
		parts[i] = groupPart{key: groupKey{m.Namespace, m.Workload},
			groupTotal: groupTotal{pods: int32(m.Pods), volumes: int32(m.Volumes), clears: int32(m.ClearsFindings)}}
	}
	driver := g.c.driverNode()
	g.each(groupOf, func(i int, n model.Node, now nodeObject, r moveRead) {
		p := &parts[i]
		p.addLoad(n, driver, now, r)
		p.kubeletDelay = addShare(p.kubeletDelay, now.kubelet.Remounts, r.kubelet.Remounts)
		p.driverDelay = addShare(p.driverDelay, now.driver+r.driver, r.driver)
	})
	return parts
}

// id numbers o.
func (g *moveGroups) id(o model.Object) int {
	o = plain(o)
	i, ok := g.objectIndex[o]
	if !ok {
		i = len(g.objects)
		g.objectIndex[o] = i
		g.objects = append(g.objects, o)
	}
	return i
}

// driverNode is a node as the model sees the driver on it.
func (c Cluster) driverNode() model.Node {
	return model.Node{Behaviour: model.Driver, WatchLifetime: driverWatchLifetime, ReadsAsPods: c.DriverReadsAsPods}
}

// addLoad adds what moving r changes on node n, where now is read, the
// driver there being driver: the kubelet's load that goes, and what the
// driver's reads of the object cost beyond those it has (a watch where it
// has none; reading as the pods, each volume's reads too).
func (t *groupTotal) addLoad(n, driver model.Node, now nodeObject, r moveRead) {
	left := model.Readers{Remounts: now.kubelet.Remounts - r.kubelet.Remounts, Retries: now.kubelet.Retries - r.kubelet.Retries}
	t.saved.add(now.object.Kind, minusLoad(model.LoadOf(n, now.object, now.kubelet), model.LoadOf(n, now.object, left)))
	if r.driver > 0 {
		t.added.add(now.object.Kind, minusLoad(model.LoadOf(driver, now.object, model.Readers{Remounts: now.driver + r.driver}),
			model.LoadOf(driver, now.object, model.Readers{Remounts: now.driver})))
	}
}

// minusLoad is a less b.
func minusLoad(a, b model.Load) model.Load {
	return model.Load{APIServerGetQPS: a.APIServerGetQPS - b.APIServerGetQPS, EtcdGetQPS: a.EtcdGetQPS - b.EtcdGetQPS,
		Watches: a.Watches - b.Watches, WatchRequestQPS: a.WatchRequestQPS - b.WatchRequestQPS}
}

// collect notes every movable pod's reads in its namespace's and its
// workload's group.
func (g *moveGroups) collect() {
	namespaceIndex, workloadIndex := g.namespaceIndex, g.workloadIndex
	for _, p := range g.c.Inventory.Pods {
		node, ok := g.nodeIndex[p.Node]
		if !ok {
			continue // the model leaves out pods of nodes it does not hold
		}
		g.noteDriverVolumes(p, node)
		if len(p.Unconverted) == 0 {
			continue
		}
		ns, ok := namespaceIndex[p.Namespace]
		if !ok {
			ns = len(g.namespaces)
			namespaceIndex[p.Namespace] = ns
			g.namespaces = append(g.namespaces, MoveGroup{Namespace: p.Namespace})
		}
		wl, ok := workloadIndex[[2]string{p.Namespace, p.Workload}]
		if !ok {
			wl = len(g.workloads)
			workloadIndex[[2]string{p.Namespace, p.Workload}] = wl
			g.workloads = append(g.workloads, MoveGroup{Namespace: p.Namespace, Workload: p.Workload})
			g.lone = append(g.lone, p.Workload == inventory.BarePodWorkload(p.Name))
		}
		volumes, clears := g.collectPod(p, moveRead{namespaceGroup: ns, workloadGroup: wl, node: node})
		for _, m := range []*MoveGroup{&g.namespaces[ns], &g.workloads[wl]} {
			m.Pods, m.Volumes, m.ClearsFindings = m.Pods+1, m.Volumes+volumes, m.ClearsFindings+clears
		}
	}
}

// collectPod notes p's reads through the volumes that would move, each as
// a copy of at (its groups and node), and returns how many volumes move
// and how many subPath findings go.
func (g *moveGroups) collectPod(p inventory.PodInfo, at moveRead) (volumes, clears int) {
	moving := func(volume string) bool {
		return slices.ContainsFunc(p.Unconverted, func(v inventory.UnconvertedVolume) bool { return v.Volume == volume })
	}
	var moved podrefs.Refs
	for _, v := range p.Refs.Volumes {
		if moving(v.Name) {
			moved.Volumes = append(moved.Volumes, v)
		}
	}
	for _, c := range p.Refs.Containers {
		for _, m := range c.SubPaths {
			if moving(m.Volume) {
				clears += len(m.Reads)
			}
		}
	}
	first := len(g.reads)
	note := func(o model.Object, add func(*moveRead)) {
		id := g.id(o)
		i := slices.IndexFunc(g.reads[first:], func(m moveRead) bool { return m.object == id })
		if i < 0 {
			at.object = id
			g.reads = append(g.reads, at)
			i = len(g.reads) - 1 - first
		}
		add(&g.reads[first+i])
	}
	kubelet := podrefs.ModelPod(p.Namespace, p.Name, moved, g.c.Inventory.Exists)
	for _, o := range kubelet.Reads {
		note(o, func(m *moveRead) { m.kubelet.Remounts++ })
	}
	for _, o := range kubelet.Retries {
		note(o, func(m *moveRead) { m.kubelet.Retries++ })
	}
	for _, v := range moved.Volumes {
		reads, ok := g.c.driverReads(p.Namespace, podrefs.DriverVolume{Name: v.Name, Reads: v.Reads})
		if !ok {
			continue // a required ConfigMap is missing: the volume would not mount
		}
		for _, o := range reads {
			note(o, func(m *moveRead) { m.driver++ })
		}
	}
	return len(moved.Volumes), clears
}

// each calls f with each group's reads of each object on each node summed,
// node by node, with what the node reads of that object now: the
// kubelet's readers (with the object's flags as the node knows them) and
// the driver's volume reads.
func (g *moveGroups) each(groupOf func(moveRead) int, f func(group int, n model.Node, now nodeObject, r moveRead)) {
	slices.SortFunc(g.reads, func(a, b moveRead) int {
		return cmp.Or(cmp.Compare(a.node, b.node), cmp.Compare(a.object, b.object), cmp.Compare(groupOf(a), groupOf(b)))
	})
	for i := 0; i < len(g.reads); {
		sum := g.reads[i]
		j := i + 1
		for ; j < len(g.reads) && g.reads[j].node == sum.node && g.reads[j].object == sum.object && groupOf(g.reads[j]) == groupOf(sum); j++ {
			sum.kubelet.Remounts += g.reads[j].kubelet.Remounts
			sum.kubelet.Retries += g.reads[j].kubelet.Retries
			sum.driver += g.reads[j].driver
		}
		node, now := g.nodeNow(sum.node)
		f(groupOf(sum), node, lookUp(now, sum.object), sum)
		i = j
	}
}

// nodeObject is what a node reads of one object now.
type nodeObject struct {
	id      int
	object  model.Object
	kubelet model.Readers
	driver  int
}

// nodeNow is node i as the model sees it, and what it reads now of the
// objects the moves read, sorted by object (lookUp finds one).
func (g *moveGroups) nodeNow(i int) (model.Node, []nodeObject) {
	name := g.c.Inventory.Nodes[i].Name
	s := g.c.Settings[name]
	n := model.Node{Name: name, SyncFrequency: s.SyncFrequency, TTL: s.TTL, Behaviour: s.Behaviour(), WatchLifetime: s.WatchLifetime()}
	if now, ok := g.now[i]; ok {
		return n, now
	}
	var now []nodeObject
	if r := g.gathered[name]; r != nil {
		r.Each(func(o model.Object, rs model.Readers) {
			if id, ok := g.objectIndex[plain(o)]; ok {
				now = append(now, nodeObject{id: id, object: o, kubelet: rs})
			}
		})
	}
	for id, k := range g.driverNow[i] {
		now = append(now, nodeObject{id: id, object: g.objects[id], driver: k})
	}
	slices.SortFunc(now, func(a, b nodeObject) int { return cmp.Compare(a.id, b.id) })
	// Where the kubelet and the driver both read an object, one entry: the
	// kubelet's, which knows the object's flags, with the driver's count.
	merged := now[:0]
	for _, e := range now {
		last := len(merged) - 1
		switch {
		case last < 0 || merged[last].id != e.id:
			merged = append(merged, e)
		case e.driver > 0:
			merged[last].driver = e.driver
		default:
			merged[last].object, merged[last].kubelet = e.object, e.kubelet
		}
	}
	now = merged
	g.now[i] = now
	return n, now
}

// lookUp is what now says of object id.
func lookUp(now []nodeObject, id int) nodeObject {
	i, _ := slices.BinarySearchFunc(now, id, func(e nodeObject, id int) int { return cmp.Compare(e.id, id) })
	return now[i]
}

// noteDriverVolumes counts p's driver volume reads on node.
func (g *moveGroups) noteDriverVolumes(p inventory.PodInfo, node int) {
	for _, v := range p.Refs.DriverVolumes {
		reads, ok := g.c.driverReads(p.Namespace, v)
		if !ok {
			continue
		}
		if g.driverNow[node] == nil {
			g.driverNow[node] = map[int]int{}
		}
		for _, o := range reads {
			g.driverNow[node][g.id(o)]++
		}
	}
}
