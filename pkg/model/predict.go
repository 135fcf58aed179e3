package model

import (
	"cmp"
	"slices"
	"sync"
	"time"
)

// Load is a rate of requests: GETs per second at the apiserver, the
// reads per second among them that reach etcd (the quorum GETs), the
// watches kept open and how often they are opened again.
type Load struct {
	// APIServerGetQPS and EtcdGetQPS are all GETs, Churn's included.
	APIServerGetQPS float64
	EtcdGetQPS      float64
	// Watches are those the steady pods keep open.
	Watches int
	// WatchRequestQPS is watches opened again per second, where the
	// node's WatchLifetime is known.
	WatchRequestQPS float64
	// Churn is the part of the load that pods coming and going cause
	// (Node.Arrivals): its GETs are in the totals above, its watch opens
	// are its own.
	Churn ChurnLoad
}

// Add adds o to l.
func (l *Load) Add(o Load) {
	l.APIServerGetQPS += o.APIServerGetQPS
	l.EtcdGetQPS += o.EtcdGetQPS
	l.Watches += o.Watches
	l.WatchRequestQPS += o.WatchRequestQPS
	l.Churn.add(o.Churn)
}

// ByKind is a load split by the kind of object read.
type ByKind map[Kind]Load

func (b ByKind) add(k Kind, l Load) {
	sum := b[k]
	sum.Add(l)
	b[k] = sum
}

// NodeLoad is one node's load, in all and by kind.
type NodeLoad struct {
	Node string
	Load
	ByKind ByKind
}

// ObjectLoad is one object's load, summed over the nodes that read it.
type ObjectLoad struct {
	Object Object
	// Nodes is how many nodes read it.
	Nodes int
	Load
}

// Prediction is the model's answer for a set of nodes.
type Prediction struct {
	Total  Load
	ByKind ByKind
	// Nodes follows the order of the input; Objects is sorted by
	// apiserver GET/s, highest first, then by watches, then by name.
	Nodes   []NodeLoad
	Objects []ObjectLoad
}

// Predict returns the steady-state load of nodes.
func Predict(nodes []Node) Prediction {
	p := Prediction{ByKind: ByKind{}, Nodes: make([]NodeLoad, 0, len(nodes))}
	byObject := map[Object]int{} // index in p.Objects
	var scratch objectScratch
	for _, n := range nodes {
		nl := NodeLoad{Node: n.Name, ByKind: ByKind{}}
		scratch.eachObjectLoad(n, func(o Object, l Load) {
			nl.Add(l)
			nl.ByKind.add(o.Kind, l)
			i, ok := byObject[key(o)]
			if !ok {
				i = len(p.Objects)
				byObject[key(o)] = i
				p.Objects = append(p.Objects, ObjectLoad{Object: o})
			}
			ol := &p.Objects[i]
			ol.Object.Immutable = ol.Object.Immutable || o.Immutable
			ol.Object.Missing = ol.Object.Missing || o.Missing
			ol.Nodes++
			ol.Add(l)
		})
		p.Nodes = append(p.Nodes, nl)
		p.Total.Add(nl.Load)
		for k, l := range nl.ByKind {
			p.ByKind.add(k, l)
		}
	}
	slices.SortFunc(p.Objects, CompareObjectLoads)
	return p
}

// CompareObjectLoads orders objects' loads as Prediction.Objects are: by
// apiserver GET/s, highest first, then by watches, then by name.
func CompareObjectLoads(a, b ObjectLoad) int {
	switch {
	case a.APIServerGetQPS != b.APIServerGetQPS:
		return cmp.Compare(b.APIServerGetQPS, a.APIServerGetQPS)
	case a.Watches != b.Watches:
		return cmp.Compare(b.Watches, a.Watches)
	case a.Object.less(b.Object):
		return -1
	case b.Object.less(a.Object):
		return 1
	}
	return 0
}

// Totals is Predict's Total and ByKind alone: what a what-if needs, at a
// fraction of the cost, since it keeps nothing per object.
func Totals(nodes []Node) (Load, ByKind) {
	var total Load
	byKind := ByKind{}
	scratch := scratches.Get().(*objectScratch)
	defer scratches.Put(scratch)
	for _, n := range nodes {
		scratch.eachObjectLoad(n, func(o Object, l Load) {
			total.Add(l)
			byKind.add(o.Kind, l)
		})
	}
	return total, byKind
}

// readers is what a node's pods do with one object: how many pod reads
// remount it on each sync, and how many failing mounts retry it.
type readers struct {
	object           Object
	remounts, mounts int
	// arrivals is the rate of arriving pods' reads (Node.Arrivals),
	// occupancy the sum of each stream's rate times its lifetime (the
	// mean number of arriving pods there that read the object), and
	// resyncs the sum of each stream's rate times its resyncs.
	arrivals, occupancy, resyncs float64
}

// objectScratch is the memory eachObjectLoad gathers one node's readers
// in, kept from node to node: a cluster's computation goes through
// thousands of nodes, several times with the what-ifs, and allocating
// afresh for each made most of its time garbage collection.
type objectScratch struct {
	index   map[Object]int
	readers []readers
}

// Reads are a node's pods' reads gathered by object: what its load needs
// of its pods, whatever its settings.
type Reads struct{ readers []readers }

// GatherReads gathers n's pods' reads, for Node.Gathered.
func GatherReads(n Node) *Reads {
	s := scratches.Get().(*objectScratch)
	defer scratches.Put(s)
	s.gather(n)
	return &Reads{readers: slices.Clone(s.readers)}
}

// scratches are GatherReads' scratch memory: analyze gathers each node's
// reads as its part is recomputed, on every core, and a map grown afresh
// each time was most of a computation's garbage.
var scratches = sync.Pool{New: func() any { return new(objectScratch) }}

// eachObjectLoad calls f with the load of every object node n reads, with
// what the node knows of it (immutable, missing), in the order its pods
// first read them.
func (s *objectScratch) eachObjectLoad(n Node, f func(Object, Load)) {
	var rs []readers
	if n.Gathered != nil {
		rs = n.Gathered.readers
	} else {
		s.gather(n)
		rs = s.readers
	}
	for _, r := range rs {
		f(r.object, objectLoad(n, r))
	}
}

// gather gathers n's pods' reads into s.readers.
func (s *objectScratch) gather(n Node) {
	if s.index == nil {
		s.index = map[Object]int{}
	}
	clear(s.index)
	s.readers = s.readers[:0]
	note := func(o Object) *readers {
		i, ok := s.index[key(o)]
		if !ok {
			i = len(s.readers)
			s.index[key(o)] = i
			s.readers = append(s.readers, readers{object: key(o)})
		}
		r := &s.readers[i]
		r.object.Immutable = r.object.Immutable || o.Immutable
		r.object.Missing = r.object.Missing || o.Missing
		return r
	}
	for _, pod := range n.Pods {
		for _, o := range pod.Reads {
			note(o).remounts++
		}
		for _, o := range pod.Retries {
			note(o).mounts++
		}
	}
	for _, a := range n.Arrivals {
		r := note(a.Object)
		r.arrivals += a.Rate
		r.occupancy += a.Rate * a.Lifetime.Seconds()
		r.resyncs += a.Rate * a.Resyncs
	}
}

// Readers counts a node's pod reads of one object: those that remount it
// on each sync, those of failing mounts that retry it, and the rate of
// arriving pods' reads (Node.Arrivals).
type Readers struct {
	Remounts, Retries int
	// Arrivals, Occupancy and Resyncs are as in Node.Arrivals: pods a
	// second, the sum of their rates times their lifetimes, and that of
	// their rates times their resyncs.
	Arrivals, Occupancy, Resyncs float64
}

// LoadOf is the load of object o on node n when rs read it. A node's
// load is the sum of its objects', each depending on that object's readers
// alone, so the difference of two LoadOfs is exactly what adding or
// taking away readers of o changes on n. No readers, no load.
func LoadOf(n Node, o Object, rs Readers) Load {
	if rs == (Readers{}) {
		return Load{}
	}
	return objectLoad(n, readers{object: o, remounts: rs.Remounts, mounts: rs.Retries, arrivals: rs.Arrivals, occupancy: rs.Occupancy, resyncs: rs.Resyncs})
}

// Each calls f with every object r gathered (with the flags its readers
// knew) and its readers.
func (r *Reads) Each(f func(o Object, rs Readers)) {
	for _, g := range r.readers {
		f(g.object, Readers{Remounts: g.remounts, Retries: g.mounts, Arrivals: g.arrivals, Occupancy: g.occupancy, Resyncs: g.resyncs})
	}
}

// objectLoad is the load of one object on node n: its steady readers'
// and its arrivals'.
func objectLoad(n Node, r readers) Load {
	var l Load
	if r.remounts > 0 || r.mounts > 0 {
		l = steadyLoad(n, r)
	}
	if r.arrivals > 0 {
		churn := entryChurnOf(n, r)
		if n.Behaviour == Driver && n.ReadsAsPods {
			// Every arriving volume reads once, and again at each renewal
			// of its pod's token while it stays.
			reads := r.arrivals + r.occupancy/TokenRenewal.Seconds()
			churn.APIServerGetQPS += reads
			churn.EtcdGetQPS += reads
		}
		l.APIServerGetQPS += churn.APIServerGetQPS
		l.EtcdGetQPS += churn.EtcdGetQPS
		l.Churn = churn
	}
	return l
}

// steadyLoad is the load of one object's steady readers on node n.
func steadyLoad(n Node, r readers) Load {
	mean, _ := SyncIntervalMoments(n.SyncFrequency)
	k := float64(r.remounts)
	// Failing mounts fetch the object at every attempt, in every
	// behaviour that reads through the API: nothing good is cached.
	retries := float64(r.mounts) / MountRetryInterval.Seconds()
	switch {
	case n.Behaviour == Driver:
		// Immutable objects too: a recreated one must reach every volume.
		l := Load{Watches: 1}
		if n.WatchLifetime > 0 {
			l.WatchRequestQPS = 1 / n.WatchLifetime.Seconds()
		}
		if n.ReadsAsPods {
			// Each volume's read at each renewal of its pod's token.
			l.APIServerGetQPS = k / TokenRenewal.Seconds()
			l.EtcdGetQPS = l.APIServerGetQPS
		}
		return l
	case n.Behaviour == Watch:
		if r.object.Immutable {
			return Load{}
		}
		l := Load{Watches: 1}
		if n.WatchLifetime > 0 {
			l.WatchRequestQPS = 1 / n.WatchLifetime.Seconds()
		}
		return l
	case n.Behaviour == Get || r.object.Missing:
		// A missing object is cached as an error, which is never
		// fresh: every remount fetches it with a quorum GET.
		return Load{APIServerGetQPS: k/mean + retries, EtcdGetQPS: k/mean + retries}
	case n.Behaviour == EverySync:
		ticks := 0.0
		if r.remounts > 0 {
			ticks = memoSyncTickRate(n.SyncFrequency, r.remounts)
		}
		if n.TTL <= 0 {
			// Nothing is ever fresh: every remount fetches, the tick's
			// first with a quorum GET, the others at resourceVersion "0".
			return Load{APIServerGetQPS: k/mean + retries, EtcdGetQPS: ticks + retries}
		}
		return Load{APIServerGetQPS: ticks + retries, EtcdGetQPS: ticks + retries}
	default: // FirstReference
		if r.remounts == 0 {
			return Load{APIServerGetQPS: retries, EtcdGetQPS: retries}
		}
		return Load{APIServerGetQPS: memoRefreshRate(n.SyncFrequency, n.TTL, r.remounts) + retries, EtcdGetQPS: retries}
	}
}

// The simulated rates are remembered by their parameters: a cluster has
// many nodes with the same S, T and k, and what-ifs ask again.
var rates = struct {
	sync.Mutex
	tick, refresh map[rateKey]float64
}{tick: map[rateKey]float64{}, refresh: map[rateKey]float64{}}

type rateKey struct {
	s, t time.Duration
	k    int
}

func memoSyncTickRate(s time.Duration, k int) float64 {
	return memo(rates.tick, rateKey{s: s, k: k}, func() float64 { return SyncTickRate(s, k) })
}

func memoRefreshRate(s, t time.Duration, k int) float64 {
	return memo(rates.refresh, rateKey{s: s, t: t, k: k}, func() float64 { return RefreshRate(s, t, k) })
}

func memo(m map[rateKey]float64, k rateKey, compute func() float64) float64 {
	rates.Lock()
	v, ok := m[k]
	rates.Unlock()
	if ok {
		return v
	}
	v = compute()
	rates.Lock()
	m[k] = v
	rates.Unlock()
	return v
}

// less orders objects by kind, namespace and name, as String would,
// without building the strings: a large cluster sorts many.
func (o Object) less(p Object) bool {
	if o.Kind != p.Kind {
		return o.Kind < p.Kind
	}
	if o.Namespace != p.Namespace {
		return o.Namespace < p.Namespace
	}
	return o.Name < p.Name
}
