package analyze

import (
	"cmp"
	"slices"
	"strings"

	"github.com/google/btree"

	"github.com/nodeagent-io/nodeagent/pkg/model"
)

// findingBlock is one pod's findings of one type, in the order found:
// what they share (their type, pod and node) once, what is each's apart.
// A large cluster has a finding or more on every pod, held from one
// computation to the next: a Finding each would hold its type, pod, node
// and namespace again.
type findingBlock struct {
	rank                  int
	typ                   FindingType
	namespace, name, node string
	// pod is the findings' Pod, namespace/name.
	pod      string
	findings []blockFinding
}

// blockFinding is what one finding of a block holds of its own. Its
// object is in the pod's namespace.
type blockFinding struct {
	container, object string
	kind              model.Kind
	detail, action    string
}

// appendTo appends b's findings to out.
func (b *findingBlock) appendTo(out []Finding) []Finding {
	for _, f := range b.findings {
		out = append(out, Finding{Type: b.typ, Pod: b.pod, Container: f.container, Node: b.node,
			Object: ObjectRef{Kind: f.kind, Namespace: b.namespace, Name: f.object}, Detail: f.detail, Action: f.action})
	}
	return out
}

func lessBlock(a, b *findingBlock) bool {
	return cmp.Or(cmp.Compare(a.rank, b.rank), strings.Compare(a.namespace, b.namespace), strings.Compare(a.name, b.name),
		strings.Compare(a.node, b.node)) < 0
}

// findingOrder keeps every pod's findings in the report's order, by type,
// then by pod: a computation takes the touched nodes' blocks out and puts
// their new ones in, and reads the whole in order, without sorting every
// finding of the cluster again. It points at the parts' blocks.
type findingOrder struct {
	blocks *btree.BTreeG[*findingBlock]
	count  int
	// last is what all returned last, with recreated then; current says
	// no block came or went since. A computation whose nodes' findings
	// did not change (a pod's container started again, a Node's status)
	// gives the report the same slice, neither copied nor garbage.
	last, lastRecreated []Finding
	current             bool
}

func newFindingOrder() *findingOrder {
	return &findingOrder{blocks: btree.NewG(32, lessBlock)}
}

// replace takes old's blocks out and puts new's in.
func (o *findingOrder) replace(old, new []findingBlock) {
	for i := range old {
		if _, found := o.blocks.Delete(&old[i]); found {
			o.count -= len(old[i].findings)
		}
	}
	for i := range new {
		o.blocks.ReplaceOrInsert(&new[i])
		o.count += len(new[i].findings)
	}
	if len(old)+len(new) > 0 {
		o.current = false
	}
}

// all are the pods' findings in order, with recreated (of type
// ImmutableRecreated, the nodes' in their names' order) in their type's
// place. The slice is shared with the next call's where nothing changed:
// not to be changed.
func (o *findingOrder) all(recreated []Finding) []Finding {
	if o.current && slices.Equal(recreated, o.lastRecreated) {
		return o.last
	}
	out := make([]Finding, 0, o.count+len(recreated)) // "findings": [] in the JSON, not null
	pivot := &findingBlock{rank: typeRank(ImmutableRecreated)}
	o.blocks.AscendLessThan(pivot, func(b *findingBlock) bool {
		out = b.appendTo(out)
		return true
	})
	out = append(out, recreated...)
	o.blocks.AscendGreaterOrEqual(pivot, func(b *findingBlock) bool {
		out = b.appendTo(out)
		return true
	})
	o.last, o.lastRecreated, o.current = out, recreated, true
	return out
}

// sameBlocks says whether two nodes' blocks hold the same findings.
func sameBlocks(a, b []findingBlock) bool {
	return slices.EqualFunc(a, b, func(x, y findingBlock) bool {
		return x.typ == y.typ && x.namespace == y.namespace && x.name == y.name && x.node == y.node && x.pod == y.pod && slices.Equal(x.findings, y.findings)
	})
}

// blocksOf groups a node's pods' findings, found pod by pod, into blocks.
func blocksOf(node string, pods []podFinding) []findingBlock {
	var out []findingBlock
	index := map[[3]string]int{}
	for _, f := range pods {
		key := [3]string{string(f.Type), f.namespace, f.name}
		i, ok := index[key]
		if !ok {
			i = len(out)
			index[key] = i
			out = append(out, findingBlock{rank: typeRank(f.Type), typ: f.Type, namespace: f.namespace, name: f.name, node: node, pod: f.Pod})
		}
		out[i].findings = append(out[i].findings, blockFinding{container: f.Container, object: f.Object.Name, kind: f.Object.Kind, detail: f.Detail, action: f.Action})
	}
	return out
}
