package analyze

import (
	"slices"
	"strings"

	"github.com/nodeagent-io/nodeagent/pkg/model"
)

// What a node's part contributes to the cluster's sums by object, by
// namespace and by group of pods that could move to the driver
// (Analysis.objectSums, namespaceSums, groupSums).

// objectSum is one object's load on one node, or summed over nodes.
type objectSum struct {
	// immutable and missing are as any node knows the object.
	immutable, missing bool
	nodes              int
	load               model.Load
	// readers are one node's readers of it; in a total, nothing.
	readers model.Readers
}

func addObjectSum(total *objectSum, v objectSum) {
	total.immutable = total.immutable || v.immutable
	total.missing = total.missing || v.missing
	total.nodes += v.nodes
	total.load.Add(v.load)
}

// kindLoads are loads by kind of object.
type kindLoads struct{ configMaps, secrets model.Load }

func addKindLoads(total *kindLoads, v kindLoads) {
	total.configMaps.Add(v.configMaps)
	total.secrets.Add(v.secrets)
}

func (k kindLoads) kinds() Kinds {
	return Kinds{ConfigMaps: ratesOf(k.configMaps), Secrets: ratesOf(k.secrets)}
}

// loadsOf is node n's load by kind, its pods' reads gathered or not.
func loadsOf(n model.Node) kindLoads {
	_, byKind := model.Totals([]model.Node{n})
	return kindLoads{configMaps: byKind[model.ConfigMap], secrets: byKind[model.Secret]}
}

// add adds l, a load of an object of kind.
func (k *kindLoads) add(kind model.Kind, l model.Load) {
	if kind == model.Secret {
		k.secrets.Add(l)
	} else {
		k.configMaps.Add(l)
	}
}

// groupKey is a group of pods: a namespace's (Workload empty) or a
// workload's.
type groupKey struct{ namespace, workload string }

// compareObjects orders objects by kind, namespace and name, not by their
// flags (which nodes may know differently). The sums call it millions of
// times a computation: each comparison is made only where the ones before
// it tie (cmp.Or would make all three).
func compareObjects(a, b model.Object) int {
	if c := strings.Compare(string(a.Kind), string(b.Kind)); c != 0 {
		return c
	}
	if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
		return c
	}
	return strings.Compare(a.Name, b.Name)
}

func compareGroupKeys(a, b groupKey) int {
	if c := strings.Compare(a.namespace, b.namespace); c != 0 {
		return c
	}
	return strings.Compare(a.workload, b.workload)
}

// objectKeys are the objects p's kubelet reads, nil for no part.
func (p *nodePart) objectKeys() []model.Object {
	if p == nil {
		return nil
	}
	out := make([]model.Object, len(p.objects))
	for i, o := range p.objects {
		out[i] = plain(o.object)
	}
	return out
}

// objectSum is p's contribution to object o's total.
func (p *nodePart) objectSum(o model.Object) objectSum {
	i, found := slices.BinarySearchFunc(p.objects, o, func(r objectRead, o model.Object) int { return compareObjects(r.object, o) })
	if !found {
		return objectSum{}
	}
	r := p.objects[i]
	return objectSum{immutable: r.object.Immutable, missing: r.object.Missing, nodes: 1, load: r.loadOn(p.node), readers: r.readers()}
}

// namespaceLoad is one namespace's objects' load on one node.
type namespaceLoad struct {
	namespace string
	load      kindLoads
}

// namespaceLoadsOf sums the loads of objects on node n by namespace,
// sorted by namespace.
func namespaceLoadsOf(n model.Node, objects []objectRead) []namespaceLoad {
	var out []namespaceLoad
	for _, o := range objects {
		i, found := slices.BinarySearchFunc(out, o.object.Namespace, func(n namespaceLoad, ns string) int { return strings.Compare(n.namespace, ns) })
		if !found {
			out = slices.Insert(out, i, namespaceLoad{namespace: o.object.Namespace})
		}
		out[i].load.add(o.object.Kind, o.loadOn(n))
	}
	return out
}

func (p *nodePart) namespaceKeys() []string {
	if p == nil {
		return nil
	}
	out := make([]string, len(p.namespaceLoads))
	for i, n := range p.namespaceLoads {
		out[i] = n.namespace
	}
	return out
}

func (p *nodePart) namespaceLoad(ns string) kindLoads {
	i, found := slices.BinarySearchFunc(p.namespaceLoads, ns, func(n namespaceLoad, ns string) int { return strings.Compare(n.namespace, ns) })
	if !found {
		return kindLoads{}
	}
	return p.namespaceLoads[i].load
}

// takeFindings are p's findings, which p then forgets; none for no part.
func (p *nodePart) takeFindings() []Finding {
	if p == nil {
		return nil
	}
	found := p.findings
	p.findings = nil
	return found
}

func (p *nodePart) groupKeys() []groupKey {
	if p == nil || p.move == nil {
		return nil
	}
	out := make([]groupKey, 0, len(p.move.groups))
	for _, g := range p.move.groups {
		if !g.lone {
			out = append(out, g.key)
		}
	}
	return out
}

func (p *nodePart) group(k groupKey) groupPart {
	i, found := slices.BinarySearchFunc(p.move.groups, k, func(g groupPart, k groupKey) int { return compareGroupKeys(g.key, k) })
	if !found {
		return groupPart{}
	}
	return p.move.groups[i]
}
