package model

import (
	"math"
	"time"
)

// Churn is what pods that come and go cost one node for one object, on top
// of the steady load of the pods that stay (docs/model.md, "Pods that come
// and go"): the GETs and watch opens that arriving pods cause.
type Churn struct {
	// Arrivals is how many pods that read the object arrive on the node
	// per second (each leaves again: the node's count stays level).
	Arrivals float64
	// Lifetime is a pod's mean time on the node, from its creation to
	// its deletion.
	Lifetime time.Duration
	// SteadyTicks is the share of 1 s ticks in which a pod that stays and
	// reads the object comes due (SyncTickRate), for every-sync.
	SteadyTicks float64
	// TTL is the node's cache TTL, for first-reference: a resync that
	// comes after it refreshes the object.
	TTL time.Duration
	// Resyncs is how many times, on average, the kubelet syncs an
	// arriving pod again while it still runs, after its first sync
	// (PLEGResyncs): each remounts its volumes.
	Resyncs float64
}

// What the kubelet does around an arriving and a leaving pod, which the
// churn's terms depend on.
const (
	// ArrivalMountDelay is the mean time from a pod's arrival (when its
	// references are registered) to its volumes' mount: a pass of the
	// desired state populator and one of the reconciler, 100 ms apart
	// each. A second arrival in that time finds the object not yet
	// fetched, and shares the first one's fetch.
	ArrivalMountDelay = 100 * time.Millisecond
	// PLEGResyncDelay is when the kubelet syncs a new pod again, after its
	// first sync: at the relist that sees its containers started, which
	// the next 1 s tick hands over.
	PLEGResyncDelay = time.Second
	// PLEGRelistPeriod is how often the kubelet's PLEG lists the node's
	// containers: each listing that sees a pod's containers change syncs
	// the pod.
	PLEGRelistPeriod = time.Second
	// ReleaseDelay is how long, on average, a deleted pod still holds its
	// references: the kubelet releases them once its volumes are
	// unmounted, at the reconciler's next pass (100 ms apart: 50 ms on
	// average), and a poll every 100 ms has seen their directories gone
	// (50 ms on average after the unmount). Registered milliseconds after
	// its arrival, a pod holds an object's watch for its time in the API
	// and this.
	ReleaseDelay = 100 * time.Millisecond
)

// PLEGResyncs is how many syncs after its first one find an arriving
// pod not yet finished, where its first sync took startup to start its
// containers (from its arrival) and they then ran for running. The first
// sync makes the pod's sandbox and starts its containers; a relist in
// that time sees the sandbox and queues a sync that runs as soon as the
// first one is done, and a relist while the containers run sees them
// started and syncs the pod again. Relists come every PLEGRelistPeriod,
// at a phase of their own, so each happens with probability
// min(1, span / PLEGRelistPeriod). A sync that finds the pod's
// containers all finished mounts nothing. The startup is counted from
// the pod's arrival where the relist can only see the sandbox once it is
// made: an upper bound, which on a node that starts pods in under a
// second overstates this term, and past a second is exact.
func PLEGResyncs(startup, running time.Duration) float64 {
	share := func(d time.Duration) float64 { return math.Max(0, math.Min(1, d.Seconds()/PLEGRelistPeriod.Seconds())) }
	return share(startup) + share(running)
}

// ChurnLoad is the load of a Churn: GETs at the apiserver and at etcd (the
// quorum ones), and watches opened.
type ChurnLoad struct {
	APIServerGetQPS float64
	EtcdGetQPS      float64
	WatchOpenQPS    float64
}

// EntryChurn is the churn's load on one entry (one object on one node)
// under b. steadyRefresh is the entry's refresh rate without churn
// (RefreshRate for first-reference; ignored by the others).
//
// Every arrival registers its references, which under every behaviour
// that caches drops the cached object, and its first mount fetches it
// with a quorum GET, ArrivalMountDelay (D) later; an arrival in between
// shares that fetch, so the fetches are those of a counter with dead time
// D: λ/(1 + λD).
//
//   - get: every read is a quorum GET: the first mount's and the
//     resyncs', r = Churn.Resyncs of them per pod: λ(1 + r).
//   - every-sync: the first mount's fetches, and the resyncs': each drops
//     the object again and its tick fetches it, unless a pod that stays
//     (SteadyTicks) or another arrival's resync is due on that tick:
//     (1 − e^(−λr))·(1 − SteadyTicks).
//   - first-reference: the first mount's fetches, λ' = λ/(1 + λD), all at
//     etcd; each restarts the TTL, so the steady refreshes (at
//     resourceVersion 0) are only those that come before the next fetch.
//     With fetches a Poisson stream of rate λ' and the steady refresh
//     cycle C = 1/steadyRefresh, they come at λ'/(e^(λ'C) − 1), which is
//     steadyRefresh as λ' goes to 0; the result is that rate less the
//     steady one, so that steady and churn add up. The resync finds the
//     object fresh where T is longer than PLEGResyncDelay; where it is
//     shorter (T = 0 on clusters under 100 nodes), it refreshes it at
//     resourceVersion 0 unless a fetch came in the T before it:
//     λr·e^(−λ'T) more.
//   - watch and csi-driver: the first pod on the node that reads the object
//     opens its watch and the last to leave closes it, ReleaseDelay (R)
//     after its deletion. The number of such pods is that of an M/G/∞
//     queue, Poisson with mean ρ = λ·(Lifetime + R), so an arrival finds
//     none with probability e^(−ρ): λ·e^(−ρ) opens per second.
func EntryChurn(b Behaviour, c Churn, steadyRefresh float64) ChurnLoad {
	lambda := c.Arrivals
	if lambda <= 0 {
		return ChurnLoad{}
	}
	fetches := lambda / (1 + lambda*ArrivalMountDelay.Seconds())
	resynced := c.Resyncs
	switch b {
	case Get:
		return ChurnLoad{APIServerGetQPS: lambda * (1 + resynced), EtcdGetQPS: lambda * (1 + resynced)}
	case EverySync:
		ticks := -math.Expm1(-lambda*resynced) * (1 - c.SteadyTicks)
		return ChurnLoad{APIServerGetQPS: fetches + ticks, EtcdGetQPS: fetches + ticks}
	case FirstReference:
		between := 0.0
		if steadyRefresh > 0 {
			between = fetches / math.Expm1(fetches/steadyRefresh)
		}
		resyncs := 0.0
		if c.TTL < PLEGResyncDelay {
			resyncs = lambda * resynced * math.Exp(-fetches*c.TTL.Seconds())
		}
		return ChurnLoad{APIServerGetQPS: fetches + between - steadyRefresh + resyncs, EtcdGetQPS: fetches}
	case Watch, Driver:
		rho := lambda * (c.Lifetime + ReleaseDelay).Seconds()
		return ChurnLoad{WatchOpenQPS: lambda * math.Exp(-rho)}
	}
	return ChurnLoad{}
}

func (l *ChurnLoad) add(o ChurnLoad) {
	l.APIServerGetQPS += o.APIServerGetQPS
	l.EtcdGetQPS += o.EtcdGetQPS
	l.WatchOpenQPS += o.WatchOpenQPS
}

// entryChurnOf is EntryChurn for one of node n's entries: its arrivals,
// beside the steady readers it has. Pods that stay keep a watched entry's
// watch open, so arrivals open none; a missing object is fetched at every
// mount, as under Get.
func entryChurnOf(n Node, r readers) ChurnLoad {
	b := n.Behaviour
	if r.object.Missing && b != Watch && b != Driver {
		b = Get
	}
	if (b == Watch || b == Driver) && r.remounts > 0 {
		return ChurnLoad{}
	}
	// The streams' mean lifetime and resyncs, weighted by their rates:
	// the number of their pods there is Poisson with mean Σ rate·lifetime.
	c := Churn{Arrivals: r.arrivals, Lifetime: time.Duration(r.occupancy / r.arrivals * float64(time.Second)), TTL: n.TTL,
		Resyncs: r.resyncs / r.arrivals}
	steadyRefresh := 0.0
	switch {
	case r.remounts == 0:
	case b == FirstReference:
		steadyRefresh = memoRefreshRate(n.SyncFrequency, n.TTL, r.remounts)
	case b == EverySync:
		c.SteadyTicks = memoSyncTickRate(n.SyncFrequency, r.remounts)
	}
	return EntryChurn(b, c, steadyRefresh)
}
