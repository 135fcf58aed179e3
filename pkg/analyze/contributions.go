package analyze

import (
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

// add adds l, a load of an object of kind.
func (k *kindLoads) add(kind model.Kind, l model.Load) {
	if kind == model.Secret {
		k.secrets.Add(l)
	} else {
		k.configMaps.Add(l)
	}
}

func addGroupPart(total *groupPart, v groupPart) {
	total.Namespace, total.Workload = v.Namespace, v.Workload
	total.Pods, total.Volumes, total.ClearsFindings = total.Pods+v.Pods, total.Volumes+v.Volumes, total.ClearsFindings+v.ClearsFindings
	total.KubeletsSaved, total.DriverAdded = total.KubeletsSaved.plus(v.KubeletsSaved), total.DriverAdded.plus(v.DriverAdded)
}

// groupKey is a group of pods: a namespace's (Workload empty) or a
// workload's.
type groupKey struct{ namespace, workload string }

func (p *nodePart) objectContributions() []contribution[model.Object, objectSum] {
	if p == nil {
		return nil
	}
	out := make([]contribution[model.Object, objectSum], len(p.objects))
	for i, o := range p.objects {
		out[i] = contribution[model.Object, objectSum]{plain(o.object),
			objectSum{immutable: o.object.Immutable, missing: o.object.Missing, nodes: 1, load: o.load, readers: o.readers}}
	}
	return out
}

func (p *nodePart) namespaceContributions() []contribution[string, kindLoads] {
	if p == nil {
		return nil
	}
	var out []contribution[string, kindLoads]
	index := map[string]int{}
	for _, o := range p.objects {
		i, ok := index[o.object.Namespace]
		if !ok {
			i = len(out)
			index[o.object.Namespace] = i
			out = append(out, contribution[string, kindLoads]{key: o.object.Namespace})
		}
		out[i].v.add(o.object.Kind, o.load)
	}
	return out
}

func (p *nodePart) groupContributions() []contribution[groupKey, groupPart] {
	if p == nil || p.move == nil {
		return nil
	}
	out := make([]contribution[groupKey, groupPart], 0, len(p.move.namespaces)+len(p.move.workloads))
	for _, g := range append(append([]groupPart(nil), p.move.namespaces...), p.move.workloads...) {
		out = append(out, contribution[groupKey, groupPart]{groupKey{g.Namespace, g.Workload}, g})
	}
	return out
}
