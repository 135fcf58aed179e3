package model

import (
	"sort"
	"time"
)

// Behaviour is what a node's agent does when a pod syncs, as far as its
// requests go.
type Behaviour string

const (
	// Get sends a quorum GET for every object on every remount: the
	// kubelet's Get strategy.
	Get Behaviour = "get"
	// EverySync drops a pod's cached objects on every sync: the kubelet's
	// Cache strategy up to v1.28, before kubernetes#120255.
	EverySync Behaviour = "every-sync"
	// FirstReference drops a cached object only when a pod first
	// references it: the Cache strategy from v1.29.
	FirstReference Behaviour = "first-reference"
	// Watch keeps one watch per object and sends no GETs: the kubelet's
	// Watch strategy (its default), and nodeagent's.
	Watch Behaviour = "watch"
)

// Behaviours lists the behaviours the model knows.
var Behaviours = []Behaviour{Get, EverySync, FirstReference, Watch}

// Kind is the kind of object a volume reads.
type Kind string

const (
	ConfigMap Kind = "ConfigMap"
	Secret    Kind = "Secret"
)

// Object is one ConfigMap or Secret. Immutable objects are never watched
// once seen.
type Object struct {
	Kind      Kind
	Namespace string
	Name      string
	Immutable bool
}

func (o Object) String() string { return string(o.Kind) + " " + o.Namespace + "/" + o.Name }

// Pod is one pod as the model sees it: how many volumes its node's agent
// writes for it, and the objects those volumes read on each remount (an
// object may repeat: two volumes reading one ConfigMap read it twice).
type Pod struct {
	Name    string
	Volumes int
	Reads   []Object
}

// Node is one node: its pods, and how its agent behaves.
type Node struct {
	Name string
	Pods []Pod
	// SyncFrequency is S, the kubelet's syncFrequency (default 1m).
	SyncFrequency time.Duration
	// TTL is T, the node's node.alpha.kubernetes.io/ttl.
	TTL       time.Duration
	Behaviour Behaviour
}

// Volumes counts the volumes the agent keeps on the node.
func (n Node) Volumes() int {
	total := 0
	for _, p := range n.Pods {
		total += p.Volumes
	}
	return total
}

// Reads counts the object reads of one remount of every volume on the
// node.
func (n Node) Reads() int {
	total := 0
	for _, p := range n.Pods {
		total += len(p.Reads)
	}
	return total
}

// ReadersPerObject counts, for each object read on the node, how many of
// the node's pod reads are of it: the k that share one cache entry.
func (n Node) ReadersPerObject() map[Object]int {
	refs := map[Object]int{}
	for _, p := range n.Pods {
		for _, o := range p.Reads {
			refs[key(o)]++
		}
	}
	return refs
}

// key is o without its Immutable flag, so that two reads of one object
// share a cache entry even if only one knew it immutable.
func key(o Object) Object { return Object{Kind: o.Kind, Namespace: o.Namespace, Name: o.Name} }

// Load is a rate of requests: GETs per second at the apiserver and the
// reads per second among them that reach etcd, and the watches kept open.
type Load struct {
	APIServerGetQPS float64
	EtcdGetQPS      float64
	Watches         int
}

func (l *Load) add(o Load) {
	l.APIServerGetQPS += o.APIServerGetQPS
	l.EtcdGetQPS += o.EtcdGetQPS
	l.Watches += o.Watches
}

// NodeLoad is one node's load.
type NodeLoad struct {
	Node string
	Load
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
	Total Load
	// Nodes follows the order of the input; Objects is sorted by
	// apiserver GET/s, highest first, then by name.
	Nodes   []NodeLoad
	Objects []ObjectLoad
}

// Predict returns the steady-state load of nodes.
func Predict(nodes []Node) Prediction {
	var p Prediction
	rates := newRateCache()
	byObject := map[Object]*ObjectLoad{}
	for _, n := range nodes {
		nl := NodeLoad{Node: n.Name}
		immutable := map[Object]bool{}
		for _, pod := range n.Pods {
			for _, o := range pod.Reads {
				immutable[key(o)] = immutable[key(o)] || o.Immutable
			}
		}
		for o, k := range n.ReadersPerObject() {
			l := rates.objectLoad(n, k, immutable[o])
			nl.add(l)
			ol := byObject[o]
			if ol == nil {
				ol = &ObjectLoad{Object: o}
				ol.Object.Immutable = immutable[o]
				byObject[o] = ol
			}
			ol.Nodes++
			ol.add(l)
		}
		p.Nodes = append(p.Nodes, nl)
		p.Total.add(nl.Load)
	}
	for _, ol := range byObject {
		p.Objects = append(p.Objects, *ol)
	}
	sort.Slice(p.Objects, func(i, j int) bool {
		a, b := p.Objects[i], p.Objects[j]
		if a.APIServerGetQPS != b.APIServerGetQPS {
			return a.APIServerGetQPS > b.APIServerGetQPS
		}
		return a.Object.String() < b.Object.String()
	})
	return p
}

// rateCache remembers the simulated rates by their parameters: a cluster
// has many nodes with the same S, T and k.
type rateCache struct {
	tick    map[rateKey]float64
	refresh map[rateKey]float64
}

type rateKey struct {
	s, t time.Duration
	k    int
}

func newRateCache() *rateCache {
	return &rateCache{tick: map[rateKey]float64{}, refresh: map[rateKey]float64{}}
}

// objectLoad is the load of one object that k of node n's pod reads read.
func (c *rateCache) objectLoad(n Node, k int, immutable bool) Load {
	mean, _ := SyncIntervalMoments(n.SyncFrequency)
	switch n.Behaviour {
	case Get:
		return Load{APIServerGetQPS: float64(k) / mean, EtcdGetQPS: float64(k) / mean}
	case Watch:
		if immutable {
			return Load{}
		}
		return Load{Watches: 1}
	case EverySync:
		rk := rateKey{s: n.SyncFrequency, k: k}
		ticks, ok := c.tick[rk]
		if !ok {
			ticks = SyncTickRate(n.SyncFrequency, k)
			c.tick[rk] = ticks
		}
		if n.TTL <= 0 {
			// Nothing is ever fresh: every remount fetches, the tick's
			// first with a quorum GET, the others at resourceVersion "0".
			return Load{APIServerGetQPS: float64(k) / mean, EtcdGetQPS: ticks}
		}
		return Load{APIServerGetQPS: ticks, EtcdGetQPS: ticks}
	default: // FirstReference
		rk := rateKey{s: n.SyncFrequency, t: n.TTL, k: k}
		rate, ok := c.refresh[rk]
		if !ok {
			rate = RefreshRate(n.SyncFrequency, n.TTL, k)
			c.refresh[rk] = rate
		}
		return Load{APIServerGetQPS: rate}
	}
}
