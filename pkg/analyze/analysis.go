package analyze

import (
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/nodeagent-io/nodeagent/pkg/model"
	"github.com/nodeagent-io/nodeagent/pkg/podrefs/inventory"
)

// Analysis is a cluster's analysis kept as one part per node, each
// computed from that node's settings, its pods and the objects they
// reference, and a result summed from the parts. Predict makes one for a
// cluster read once; `analyze --serve` keeps one and recomputes, at each
// change, the parts of the nodes the change touches (Update): a pod's
// node, the nodes whose pods reference an object (NodesReading), a node
// whose Node or settings changed. Summing the parts costs a pass over
// them; nothing else is recomputed.
//
// A part is a function of its node's inputs alone, and the sums go over
// the parts in the nodes' names' order: an Analysis updated after any
// series of changes holds the same result, to the last bit, as one made
// afresh from the cluster as it then is.
type Analysis struct {
	parts map[string]*nodePart
	// sorted are the parts by node name; nil after a node came or went
	// (keepSorted).
	sorted []*nodePart
	// readers are, by object, the nodes whose pods reference it where
	// their kubelet does not read it (objectSums has those); byNamespace,
	// the nodes with a pod in each namespace.
	readers     map[objectKey][]string
	byNamespace map[string][]string
	// objectSums, namespaceSums and groupSums are the parts' loads by
	// object, by namespace and by group of pods that could move.
	objectSums    *sums[model.Object, objectSum]
	namespaceSums *sums[string, kindLoads]
	groupSums     *sums[groupKey, groupTotal]
	// findingOrder holds the pods' findings in the report's order, the
	// parts none.
	findingOrder *findingOrder
	// top is how many rows the report's tables have: a part keeps only
	// its top lone groups (groupPart.lone), as the cluster's top ones are
	// among them.
	top int
}

// NewAnalysis returns an Analysis of no node, whose report's tables have
// top rows (Result).
func NewAnalysis(top int) *Analysis {
	a := &Analysis{parts: map[string]*nodePart{}, readers: map[objectKey][]string{}, byNamespace: map[string][]string{}, findingOrder: newFindingOrder(),
		top: top}
	a.objectSums = newSums(addObjectSum, func(node string, o model.Object) objectSum { return a.parts[node].objectSum(o) })
	a.namespaceSums = newSums(addKindLoads, func(node, ns string) kindLoads { return a.parts[node].namespaceLoad(ns) })
	a.groupSums = newSums(addGroupTotal, func(node string, k groupKey) groupTotal { return a.parts[node].group(k).groupTotal })
	return a
}

// PodsOn returns the pods of one node, sorted by namespace and name.
type PodsOn func(node string) []inventory.PodInfo

// Update makes the parts those of c: it computes the part of each node
// that dirty names, of each node whose Node, settings or arrivals changed
// and of each new node, and drops those of nodes c no longer holds. It returns
// how many parts it computed.
func (a *Analysis) Update(c Cluster, podsOn PodsOn, dirty func(node string) bool) int {
	held := make(map[string]bool, len(c.Inventory.Nodes))
	var todo []inventory.NodeInfo
	for _, n := range c.Inventory.Nodes {
		held[n.Name] = true
		p := a.parts[n.Name]
		if p == nil || dirty(n.Name) || p.info != n || !sameSettings(p.settings, c.Settings[n.Name]) || !p.churn.equal(c.churnOn(n.Name)) {
			todo = append(todo, n)
		}
	}
	for name, p := range a.parts {
		if !held[name] {
			a.replace(p, nil)
			delete(a.parts, name)
		}
	}
	computed := make([]*nodePart, len(todo))
	var wg sync.WaitGroup
	next := make(chan int)
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for i := range next {
				computed[i] = c.newNodePart(todo[i], podsOn(todo[i].Name), a.top)
			}
		})
	}
	for i := range todo {
		next <- i
	}
	close(next)
	wg.Wait()
	for _, p := range computed {
		a.replace(a.parts[p.info.Name], p)
		a.parts[p.info.Name] = p
	}
	a.objectSums.settle()
	a.namespaceSums.settle()
	a.groupSums.settle()
	return len(todo)
}

// replace takes old's contributions out of the sums and indexes and puts
// new's in; either may be nil.
func (a *Analysis) replace(old, new *nodePart) {
	node := new
	if node == nil {
		node = old
	}
	name := node.info.Name
	if old != nil {
		a.forget(old)
	}
	if new != nil {
		a.remember(new)
	}
	a.objectSums.replace(name, old.objectKeys(), new.objectKeys())
	a.namespaceSums.replace(name, old.namespaceKeys(), new.namespaceKeys())
	a.groupSums.replace(name, old.groupKeys(), new.groupKeys())
	a.findingOrder.replace(name, new.takeFindings())
	a.keepSorted(old, new)
}

// keepSorted keeps a.sorted in order where a part took another's place,
// and forgets it where a node came or went.
func (a *Analysis) keepSorted(old, new *nodePart) {
	if old == nil || new == nil || a.sorted == nil {
		a.sorted = nil
		return
	}
	i, found := slices.BinarySearchFunc(a.sorted, old.info.Name, func(p *nodePart, name string) int { return strings.Compare(p.info.Name, name) })
	if !found {
		a.sorted = nil
		return
	}
	a.sorted[i] = new
}

// sameSettings says whether two nodes' settings are the same.
func sameSettings(a, b Settings) bool {
	sameVersion := (a.Version == nil) == (b.Version == nil) && (a.Version == nil || a.Version.String() == b.Version.String())
	a.Version, b.Version = nil, nil
	return sameVersion && slices.Equal(a.Notes, b.Notes) && a.KubeletVersion == b.KubeletVersion && a.Strategy == b.Strategy &&
		a.SyncFrequency == b.SyncFrequency && a.TTL == b.TTL && a.Source == b.Source
}

// remember indexes p's node by the objects and namespaces its pods read.
func (a *Analysis) remember(p *nodePart) {
	for _, k := range p.refs {
		a.readers[k] = insertName(a.readers[k], p.info.Name)
	}
	for _, ns := range p.namespaces {
		a.byNamespace[ns] = insertName(a.byNamespace[ns], p.info.Name)
	}
}

// forget undoes remember.
func (a *Analysis) forget(p *nodePart) {
	for _, k := range p.refs {
		if a.readers[k] = deleteName(a.readers[k], p.info.Name); len(a.readers[k]) == 0 {
			delete(a.readers, k)
		}
	}
	for _, ns := range p.namespaces {
		if a.byNamespace[ns] = deleteName(a.byNamespace[ns], p.info.Name); len(a.byNamespace[ns]) == 0 {
			delete(a.byNamespace, ns)
		}
	}
}

// insertName and deleteName keep a sorted list of names.
func insertName(names []string, name string) []string {
	if i, found := slices.BinarySearch(names, name); !found {
		return slices.Insert(names, i, name)
	}
	return names
}

func deleteName(names []string, name string) []string {
	if i, found := slices.BinarySearch(names, name); found {
		return slices.Delete(names, i, i+1)
	}
	return names
}

// NodesReading are the nodes whose pods reference an object, whether it
// exists or not: those whose parts its change recomputes.
func (a *Analysis) NodesReading(kind model.Kind, namespace, name string) []string {
	out := append(slices.Clone(a.readers[objectKey{kind, namespace, name}]),
		a.objectSums.nodesOf(model.Object{Kind: kind, Namespace: namespace, Name: name})...)
	slices.Sort(out)
	return slices.Compact(out)
}

// NodesInNamespace are the nodes with a pod in namespace.
func (a *Analysis) NodesInNamespace(namespace string) []string {
	return slices.Clone(a.byNamespace[namespace])
}

// inOrder are the parts by node name.
func (a *Analysis) inOrder() []*nodePart {
	if a.sorted == nil {
		a.sorted = make([]*nodePart, 0, len(a.parts))
		for _, p := range a.parts {
			a.sorted = append(a.sorted, p)
		}
		slices.SortFunc(a.sorted, func(x, y *nodePart) int { return strings.Compare(x.info.Name, y.info.Name) })
	}
	return a.sorted
}
