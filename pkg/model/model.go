package model

import (
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
	// Driver is nodeagent's CSI driver serving a node's csi volumes of
	// configmaps.nodeagent.io (docs/csi.md): one watch per object, immutable
	// ones included, no GETs, and each update written on the reconciler's
	// next pass after the watch delivers it, not at the pod's next sync.
	Driver Behaviour = "csi-driver"
)

// Behaviours lists the behaviours a kubelet (or the agent standing in for
// one) can have; Driver serves volumes beside a kubelet and is not one.
var Behaviours = []Behaviour{Get, EverySync, FirstReference, Watch}

// Kind is the kind of object a volume reads.
type Kind string

const (
	ConfigMap Kind = "ConfigMap"
	Secret    Kind = "Secret"
)

// Object is one ConfigMap or Secret. Immutable objects are never watched
// once seen. A Missing object (read by an optional volume or source) is
// never cached as good: every read of it fetches again, with a quorum GET.
type Object struct {
	Kind      Kind
	Namespace string
	Name      string
	Immutable bool
	Missing   bool
}

func (o Object) String() string { return string(o.Kind) + " " + o.Namespace + "/" + o.Name }

// Pod is one pod as the model sees it: how many volumes its node's agent
// writes for it, and the objects those volumes read on each remount (an
// object may repeat: two volumes reading one ConfigMap read it twice).
type Pod struct {
	Name    string
	Volumes int
	Reads   []Object
	// Retries are the reads of volumes that cannot mount because an
	// object they require is missing: the agent retries each such mount
	// at its longest backoff (MountRetryInterval), with quorum GETs, and
	// never remounts it on a sync.
	Retries []Object
}

// Arrival is a stream of pods arriving on a node that read Object: Rate
// pods a second, as a Poisson stream, each there Lifetime on average,
// from its creation to its deletion, and synced again Resyncs times on
// average while it runs (PLEGResyncs).
type Arrival struct {
	Object   Object
	Rate     float64
	Lifetime time.Duration
	Resyncs  float64
}

// MountRetryInterval is the kubelet's longest backoff between two
// attempts to mount a failing volume, 2 m 2 s: the steady interval of a
// mount that keeps failing.
const MountRetryInterval = 122 * time.Second

// Node is one node: its pods, and how its agent behaves.
type Node struct {
	Name string
	Pods []Pod
	// SyncFrequency is S, the kubelet's syncFrequency (default 1m).
	SyncFrequency time.Duration
	// TTL is T, the node's node.alpha.kubernetes.io/ttl.
	TTL       time.Duration
	Behaviour Behaviour
	// WatchLifetime is how long the agent's watches last, on average,
	// before the apiserver closes them and the agent opens them again
	// (from where they stopped, without a LIST). Zero leaves re-opened
	// watches out of the prediction.
	WatchLifetime time.Duration
	// Arrivals, where pods come and go, are the objects that arriving pods
	// read, how many such pods arrive a second (each read once per pod)
	// and how long they stay: what they cost comes on top of the steady
	// load of Pods, the pods that stay (docs/model.md, "Pods that come
	// and go").
	Arrivals []Arrival
	// ReadsAsPods, for Driver, is the driver reading as the pods (its
	// default): each volume reads its objects with a quorum GET, with its
	// pod's token, when it is published and at each renewal of that token
	// (TokenRenewal), beside the one watch.
	ReadsAsPods bool
	// Gathered, where not nil, are Pods' reads already gathered by object
	// (GatherReads), which the load is then computed from: the what-ifs
	// ask a cluster's same pods under other settings, and gathering is
	// most of the cost.
	Gathered *Reads
}

// TokenRenewal is how often the kubelet brings a driver volume a renewed
// token, which the driver reading as the pods reads the volume's objects
// with again: at 80 % of the hour a token it requests for a CSI driver is
// valid for.
const TokenRenewal = 48 * time.Minute

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
	reads := 0
	for _, p := range n.Pods {
		reads += len(p.Reads)
	}
	refs := make(map[Object]int, reads) // at most that many; grown, it made most of a large cluster's garbage
	for _, p := range n.Pods {
		for _, o := range p.Reads {
			refs[key(o)]++
		}
	}
	return refs
}

// key is o without its Immutable and Missing flags, so that two reads of
// one object share a cache entry even if only one knew it immutable.
func key(o Object) Object { return Object{Kind: o.Kind, Namespace: o.Namespace, Name: o.Name} }
