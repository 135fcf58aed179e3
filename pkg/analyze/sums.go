package analyze

import (
	"slices"
)

// sums keeps, for each key (an object, a namespace, a group of pods), what
// each node contributes to it and the total over the nodes. A node's
// contributions are replaced whole when its part is recomputed, and only
// the totals of the keys they touch are summed again, over their nodes in
// the order of the nodes' names: a total is the same, to the last bit, as
// a sum made afresh.
type sums[K comparable, V any] struct {
	entries map[K]*sumEntry[V]
	// changed are the keys whose totals are due.
	changed map[K]struct{}
	// add adds a contribution to a total.
	add func(total *V, v V)
}

// sumEntry is one key's contributions, by node name, and their total.
type sumEntry[V any] struct {
	nodes []string
	parts []V
	total V
}

func newSums[K comparable, V any](add func(*V, V)) *sums[K, V] {
	return &sums[K, V]{entries: map[K]*sumEntry[V]{}, changed: map[K]struct{}{}, add: add}
}

// contribution is one node's part of one key's total.
type contribution[K comparable, V any] struct {
	key K
	v   V
}

// replace makes node's contributions new in place of old (what it
// contributed before, nil for none).
func (s *sums[K, V]) replace(node string, old, new []contribution[K, V]) {
	for _, c := range old {
		e := s.entries[c.key]
		if e == nil {
			continue
		}
		if i, found := slices.BinarySearch(e.nodes, node); found {
			e.nodes, e.parts = slices.Delete(e.nodes, i, i+1), slices.Delete(e.parts, i, i+1)
		}
		s.changed[c.key] = struct{}{}
	}
	for _, c := range new {
		e := s.entries[c.key]
		if e == nil {
			e = &sumEntry[V]{}
			s.entries[c.key] = e
		}
		i, found := slices.BinarySearch(e.nodes, node)
		if found {
			s.add(&e.parts[i], c.v) // a key twice in one node's contributions
		} else {
			e.nodes, e.parts = slices.Insert(e.nodes, i, node), slices.Insert(e.parts, i, c.v)
		}
		s.changed[c.key] = struct{}{}
	}
}

// settle sums the totals that are due; a key no node contributes to any
// more is forgotten.
func (s *sums[K, V]) settle() {
	for k := range s.changed {
		e := s.entries[k]
		if e == nil {
			continue
		}
		if len(e.nodes) == 0 {
			delete(s.entries, k)
			continue
		}
		var total V
		for _, v := range e.parts {
			s.add(&total, v)
		}
		e.total = total
	}
	clear(s.changed)
}

// each calls f with every key's total, in no order.
func (s *sums[K, V]) each(f func(K, V)) {
	for k, e := range s.entries {
		f(k, e.total)
	}
}

// contributions calls f with each node's contribution to k, in the order
// of the nodes' names.
func (s *sums[K, V]) contributions(k K, f func(node string, v V)) {
	if e := s.entries[k]; e != nil {
		for i, node := range e.nodes {
			f(node, e.parts[i])
		}
	}
}

// topOf keeps the n least of the values each gives, by compare, in order:
// a pass over them with no copy of them all.
func topOf[T any](n int, compare func(a, b T) int, each func(func(T))) []T {
	top := make([]T, 0, n+1)
	each(func(v T) {
		if len(top) == n && (n == 0 || compare(v, top[n-1]) >= 0) {
			return
		}
		i, _ := slices.BinarySearchFunc(top, v, compare)
		top = slices.Insert(top, i, v)
		if len(top) > n {
			top = top[:n]
		}
	})
	return top
}
