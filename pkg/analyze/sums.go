package analyze

import (
	"slices"
)

// sums keeps, for each key (an object, a namespace, a group of pods), the
// nodes that contribute to it and the total of their contributions, which
// the parts hold (valueOf reads one). A node's keys are replaced whole when
// its part is recomputed, and only the totals of the keys they touch are
// summed again, over their nodes in the order of the nodes' names: a total
// is the same, to the last bit, as a sum made afresh.
type sums[K comparable, V any] struct {
	// index places each key in keys, totals and nodes: the totals in one
	// slice, so that a pass over every key's (a report's top tables) reads
	// memory in order.
	index  map[K]int
	keys   []K
	totals []V
	// nodes are each key's contributing nodes, by name.
	nodes [][]string
	// changed are the keys whose totals are due.
	changed map[K]struct{}
	// add adds a contribution to a total; valueOf is a node's contribution
	// to a key, from its part.
	add     func(total *V, v V)
	valueOf func(node string, k K) V
}

func newSums[K comparable, V any](add func(*V, V), valueOf func(string, K) V) *sums[K, V] {
	return &sums[K, V]{index: map[K]int{}, changed: map[K]struct{}{}, add: add, valueOf: valueOf}
}

// place is k's place, made where there is none and make is set.
func (s *sums[K, V]) place(k K, make bool) (int, bool) {
	if i, ok := s.index[k]; ok {
		return i, true
	}
	if !make {
		return 0, false
	}
	s.index[k] = len(s.keys)
	s.keys = append(s.keys, k)
	var zero V
	s.totals = append(s.totals, zero)
	s.nodes = append(s.nodes, nil)
	return len(s.keys) - 1, true
}

// replace makes node a contributor to the keys of new (each once) in
// place of those of old.
func (s *sums[K, V]) replace(node string, old, new []K) {
	for _, k := range old {
		if i, ok := s.place(k, false); ok {
			if j, found := slices.BinarySearch(s.nodes[i], node); found {
				s.nodes[i] = slices.Delete(s.nodes[i], j, j+1)
			}
			s.changed[k] = struct{}{}
		}
	}
	for _, k := range new {
		i, _ := s.place(k, true)
		if j, found := slices.BinarySearch(s.nodes[i], node); !found {
			s.nodes[i] = slices.Insert(s.nodes[i], j, node)
		}
		s.changed[k] = struct{}{}
	}
}

// settle sums the totals that are due, from the parts as they are now; a
// key no node contributes to any more is forgotten.
func (s *sums[K, V]) settle() {
	for k := range s.changed {
		i, ok := s.index[k]
		if !ok {
			continue
		}
		if len(s.nodes[i]) == 0 {
			s.remove(k, i)
			continue
		}
		var total V
		for _, node := range s.nodes[i] {
			s.add(&total, s.valueOf(node, k))
		}
		s.totals[i] = total
	}
	clear(s.changed)
}

// remove forgets key k, at i: the last key takes its place.
func (s *sums[K, V]) remove(k K, i int) {
	last := len(s.keys) - 1
	if i != last {
		s.keys[i], s.totals[i], s.nodes[i] = s.keys[last], s.totals[last], s.nodes[last]
		s.index[s.keys[i]] = i
	}
	var zeroK K
	var zeroV V
	s.keys[last], s.totals[last], s.nodes[last] = zeroK, zeroV, nil
	s.keys, s.totals, s.nodes = s.keys[:last], s.totals[:last], s.nodes[:last]
	delete(s.index, k)
}

// each calls f with every key's total, in no order.
func (s *sums[K, V]) each(f func(K, V)) {
	for i, k := range s.keys {
		f(k, s.totals[i])
	}
}

// nodesOf are the nodes that contribute to k, by name: not to be changed.
func (s *sums[K, V]) nodesOf(k K) []string {
	if i, ok := s.index[k]; ok {
		return s.nodes[i]
	}
	return nil
}

// contributions calls f with each node's contribution to k, in the order
// of the nodes' names.
func (s *sums[K, V]) contributions(k K, f func(node string, v V)) {
	if i, ok := s.index[k]; ok {
		for _, node := range s.nodes[i] {
			f(node, s.valueOf(node, k))
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
