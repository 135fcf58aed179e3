package live

import (
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/nodeagent-io/nodeagent/pkg/analyze"
	"github.com/nodeagent-io/nodeagent/pkg/model"
	"github.com/nodeagent-io/nodeagent/pkg/podrefs/inventory"
)

// objectName names one ConfigMap or Secret.
type objectName struct {
	kind            model.Kind
	namespace, name string
}

// pending are the changes the informers reported since the last
// computation: what the next one must read again.
type pending struct {
	// everything is set until the first computation: nothing is held yet.
	everything bool
	// nodes are the nodes whose pods changed, or whose Node did.
	nodes sets.Set[string]
	// nodesChanged says a Node came, went or changed.
	nodesChanged bool
	objects      sets.Set[objectName]
	namespaces   sets.Set[string]
	// driverNodes says a CSINode's driver came or went.
	driverNodes bool
}

func newPending() pending {
	return pending{nodes: sets.New[string](), objects: sets.New[objectName](), namespaces: sets.New[string]()}
}

// held is what the analyzer holds of the cluster between computations:
// the inventory's nodes, objects and opted-in namespaces (kept from the
// informers' stores as they change, not copied at each computation; the
// pods stay in the pods informer, by node) and the analysis made of them.
type held struct {
	inv      *inventory.Inventory
	analysis *analyze.Analysis
}

// apply brings h up to date with the informers for the changes in p, and
// returns the nodes whose parts of the analysis the changes touch (those
// whose Node or settings changed, or that are new, the analysis finds
// itself). A new analysis has top rows in its report's tables.
func (h *held) apply(w *watcher, p pending, top int) sets.Set[string] {
	if p.everything || h.inv == nil {
		h.inv, h.analysis = w.inventory(), analyze.NewAnalysis(top)
		return nil
	}
	dirty := p.nodes.Clone()
	if p.nodesChanged {
		h.inv.Nodes = w.nodeInfos()
	}
	for o := range p.objects {
		info := w.objectInfo(o)
		if info == nil {
			h.inv.RemoveObject(o.kind, o.namespace, o.name)
		} else {
			h.inv.AddObjectInfo(o.kind, o.namespace, o.name, info)
		}
		dirty.Insert(h.analysis.NodesReading(o.kind, o.namespace, o.name)...)
	}
	if p.driverNodes && w.csiNodes != nil {
		h.inv.DriverNodes = w.driverNodes()
	}
	if len(p.namespaces) > 0 && w.namespaces != nil {
		h.inv.OptedIn = w.optedIn()
		for ns := range p.namespaces {
			dirty.Insert(h.analysis.NodesInNamespace(ns)...)
		}
	}
	return dirty
}

// objectInfo is what the informers hold of o now, nil where it does not
// exist.
func (w *watcher) objectInfo(o objectName) *inventory.ObjectInfo {
	store := w.configMaps.GetStore()
	if o.kind == model.Secret {
		if w.secrets == nil {
			return nil
		}
		store = w.secrets.GetStore()
	}
	if obj, ok, _ := store.GetByKey(o.namespace + "/" + o.name); ok {
		if e, ok := obj.(*objectEntry); ok {
			return e.Info
		}
	}
	return nil
}

// podsOn are the served pods bound to node, by namespace and name.
func (w *watcher) podsOn(node string) []inventory.PodInfo {
	objs, _ := w.pods.GetIndexer().ByIndex(byNode, node)
	entries := make([]*podEntry, 0, len(objs))
	for _, obj := range objs {
		if e, ok := obj.(*podEntry); ok && e.Served {
			entries = append(entries, e)
		}
	}
	slices.SortFunc(entries, func(a, b *podEntry) int {
		if c := strings.Compare(a.namespace, b.namespace); c != 0 {
			return c
		}
		return strings.Compare(a.name, b.name)
	})
	out := make([]inventory.PodInfo, len(entries))
	for i, e := range entries {
		out[i] = e.info()
	}
	return out
}

// byNode is the pods informer's index of served pods by node name.
const byNode = "node"

// indexByNode indexes a served pod entry by its node.
func indexByNode(obj any) ([]string, error) {
	if e, ok := obj.(*podEntry); ok && e.Served {
		return []string{e.node.Value()}, nil
	}
	return nil, nil
}
