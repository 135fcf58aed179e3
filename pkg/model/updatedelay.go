package model

import (
	"cmp"
	"slices"
	"sort"
	"strings"
	"time"
)

// Delay is how long an update of an object takes to reach the volumes that
// read it, in seconds: the median over every (pod, object) read it covers,
// and the longest it can be (docs/model.md, "Update delay").
type Delay struct {
	Median float64 `json:"median"`
	Max    float64 `json:"max"`
}

// DelayGroup is Weight volume reads of one object on one node whose update
// delays share a distribution: the node's behaviour, S and T, and K, how
// many of the node's pod reads share the object's cached copy.
type DelayGroup struct {
	Behaviour     Behaviour
	SyncFrequency time.Duration
	TTL           time.Duration
	K             int
	Weight        int
}

// ShareCounts counts, for each k, the objects that k of node n's pod reads
// share: all that the node's update delay needs of its pods, whatever its
// settings, so that what-ifs can count once.
func ShareCounts(n Node) map[int]int {
	counts := map[int]int{}
	n.EachReaderCount(func(_ Object, k int) { counts[k]++ })
	return counts
}

// EachReaderCount calls f with each object n's pods' volumes read (without
// its Immutable and Missing flags, as ReadersPerObject keys it) and how many
// of their reads do, from n.Gathered where it is set.
func (n Node) EachReaderCount(f func(o Object, k int)) {
	if n.Gathered == nil {
		for o, k := range n.ReadersPerObject() {
			f(o, k)
		}
		return
	}
	for _, r := range n.Gathered.readers {
		if r.remounts > 0 {
			f(key(r.object), r.remounts)
		}
	}
}

// DelayGroupsOf are the groups of node n's volume reads (reads of failing
// mounts are none), from its ShareCounts and its settings.
func DelayGroupsOf(n Node, shares map[int]int) []DelayGroup {
	groups := make([]DelayGroup, 0, len(shares))
	for k, objects := range shares {
		groups = append(groups, DelayGroup{Behaviour: n.Behaviour, SyncFrequency: n.SyncFrequency, TTL: n.TTL, K: k, Weight: k * objects})
	}
	return groups
}

// DelayOf is the update delay over groups of reads: the median of their
// mixture, each read weighing the same, and the longest bound among them;
// ok is false where there are no reads.
func DelayOf(groups []DelayGroup) (d Delay, ok bool) {
	var dists []weightedSamples
	hi := 0.0
	for _, g := range mergeWeights(groups) {
		samples := updateDelaySamples(g.Behaviour, g.SyncFrequency, g.TTL, g.K)
		if len(samples) == 0 {
			continue
		}
		dists = append(dists, weightedSamples{samples, float64(g.Weight)})
		hi = max(hi, samples[len(samples)-1])
		d.Max = max(d.Max, UpdateBound(g.Behaviour, g.SyncFrequency, g.TTL))
	}
	if len(dists) == 0 {
		return Delay{}, false
	}
	d.Median = mixtureMedian(dists, hi)
	return d, true
}

// mergeWeights adds up the weights of groups of one distribution (a
// cluster's thousands of nodes share a handful of settings) and returns
// them in a fixed order: the mixture's CDF is a sum of floats, and where it
// is flat at one half a sum in another order moves the median.
func mergeWeights(groups []DelayGroup) []DelayGroup {
	weights := map[DelayGroup]int{}
	for _, g := range groups {
		if g.Weight > 0 {
			key := g
			key.Weight = 0
			weights[key] += g.Weight
		}
	}
	out := make([]DelayGroup, 0, len(weights))
	for g, w := range weights {
		g.Weight = w
		out = append(out, g)
	}
	slices.SortFunc(out, func(a, b DelayGroup) int {
		return cmp.Or(strings.Compare(string(a.Behaviour), string(b.Behaviour)), cmp.Compare(a.SyncFrequency, b.SyncFrequency),
			cmp.Compare(a.TTL, b.TTL), cmp.Compare(a.K, b.K))
	})
	return out
}

// weightedSamples is one group's sorted delay samples and its weight.
type weightedSamples struct {
	samples []float64
	weight  float64
}

// mixtureMedian is the median of the weighted mixture of dists, every
// sample of which lies in [0, hi], found by bisection of the mixture's CDF
// (the weighted share of samples at or below x).
func mixtureMedian(dists []weightedSamples, hi float64) float64 {
	cdf := func(x float64) float64 {
		sum, weights := 0.0, 0.0
		for _, w := range dists {
			below := sort.Search(len(w.samples), func(i int) bool { return w.samples[i] > x })
			sum += w.weight * float64(below) / float64(len(w.samples))
			weights += w.weight
		}
		return sum / weights
	}
	lo := 0.0
	for range 60 { // to well under a millisecond
		mid := (lo + hi) / 2
		if cdf(mid) < 0.5 {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}
