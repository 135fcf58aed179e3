package analyze

import (
	"cmp"
	"slices"
	"strings"
)

// findingOrder keeps every pod's findings in the report's order, in one
// slice that the reports share: by type, then by pod (namespace and
// name), then by node, each pod's findings of a type in the order found.
// It also knows where each node's are. A computation hands it the
// findings of the nodes it recomputed (replace); those that changed are
// merged in at the next report (all), the others dropped at once. A
// large cluster has a finding or more on every pod: held once, not once
// in each node's part and again in the report.
type findingOrder struct {
	sorted []Finding
	// at are the positions of each node's findings in sorted, in order.
	at map[string][]int32
	// pending are the findings of the nodes whose findings changed since
	// sorted was made, by node (none for a node that went).
	pending map[string][]Finding
	// last is what all returned last, with recreated then; current says
	// nothing changed since.
	last, lastRecreated []Finding
	current             bool
}

func newFindingOrder() *findingOrder {
	return &findingOrder{at: map[string][]int32{}, pending: map[string][]Finding{}}
}

// replace makes found (in the report's order, as nodeFindings gives
// them) node's findings; nil for a node that went.
func (o *findingOrder) replace(node string, found []Finding) {
	if pending, ok := o.pending[node]; ok {
		if !slices.Equal(pending, found) {
			o.pending[node] = found
		}
		return
	}
	at := o.at[node]
	same := len(at) == len(found)
	for i := 0; same && i < len(at); i++ {
		same = o.sorted[at[i]] == found[i]
	}
	if !same {
		o.pending[node] = found
	}
}

// all are the pods' findings in order, with recreated (of type
// ImmutableRecreated, the nodes' in their names' order) in their type's
// place. The slice is shared with later calls' and reports: not to be
// changed.
func (o *findingOrder) all(recreated []Finding) []Finding {
	if len(o.pending) > 0 {
		o.merge()
		o.current = false
	}
	if o.current && slices.Equal(recreated, o.lastRecreated) {
		return o.last
	}
	out := o.sorted
	if len(recreated) > 0 {
		pivot, _ := slices.BinarySearchFunc(o.sorted, typeRank(ImmutableRecreated), func(f Finding, rank int) int { return cmp.Compare(typeRank(f.Type), rank) })
		out = make([]Finding, 0, len(o.sorted)+len(recreated))
		out = append(append(append(out, o.sorted[:pivot]...), recreated...), o.sorted[pivot:]...)
	}
	if out == nil {
		out = []Finding{} // "findings": [] in the JSON, not null
	}
	o.last, o.lastRecreated, o.current = out, recreated, true
	return out
}

// merge makes sorted anew: the findings of nodes not pending as they
// were, the pending ones merged in; a new slice, since reports share the
// old one.
func (o *findingOrder) merge() {
	var added []Finding
	for _, found := range o.pending {
		added = append(added, found...)
	}
	// Each node's are in order; across nodes, the node breaks ties.
	slices.SortStableFunc(added, compareFindings)
	merged := make([]Finding, 0, len(o.sorted)+len(added))
	i := 0
	for _, f := range o.sorted {
		if _, replaced := o.pending[f.Node]; replaced {
			continue
		}
		for ; i < len(added) && compareFindings(added[i], f) < 0; i++ {
			merged = append(merged, added[i])
		}
		merged = append(merged, f)
	}
	merged = append(merged, added[i:]...)
	o.sorted = merged
	clear(o.pending)
	clear(o.at)
	for i, f := range merged {
		o.at[f.Node] = append(o.at[f.Node], int32(i))
	}
}

// compareFindings orders findings as the report does, but within one
// pod's of a type (their order found).
func compareFindings(a, b Finding) int {
	if c := cmp.Compare(typeRank(a.Type), typeRank(b.Type)); c != 0 {
		return c
	}
	aNamespace, aName, _ := strings.Cut(a.Pod, "/")
	bNamespace, bName, _ := strings.Cut(b.Pod, "/")
	if c := strings.Compare(aNamespace, bNamespace); c != 0 {
		return c
	}
	if c := strings.Compare(aName, bName); c != 0 {
		return c
	}
	return strings.Compare(a.Node, b.Node)
}

// nodeFindings puts a node's pods' findings, found pod by pod, in the
// report's order: by type, then by pod, each pod's of a type as found.
// In that order alone are a node's findings of two computations compared
// (findingOrder.replace), whatever order its pods came in.
func nodeFindings(found []Finding) []Finding {
	slices.SortStableFunc(found, compareFindings)
	return found
}
