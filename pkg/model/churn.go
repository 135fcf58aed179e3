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
	// Lifetime is a pod's mean time on the node.
	Lifetime time.Duration
}

// ChurnLoad is the load of a Churn: GETs at the apiserver and at etcd (the
// quorum ones), and watches opened.
type ChurnLoad struct {
	APIServerGetQPS float64
	EtcdGetQPS      float64
	WatchOpenQPS    float64
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
	steadyRefresh := 0.0
	if b == FirstReference && r.remounts > 0 {
		steadyRefresh = memoRefreshRate(n.SyncFrequency, n.TTL, r.remounts)
	}
	return EntryChurn(b, Churn{Arrivals: r.arrivals, Lifetime: n.PodLifetime}, steadyRefresh)
}

// EntryChurn is the churn's load on one entry (one object on one node)
// under b. steadyRefresh is the entry's refresh rate without churn
// (RefreshRate for first-reference; ignored by the others).
//
//   - get and every-sync: each arrival's first mount reads the object
//     once more, with a quorum GET: Arrivals.
//   - first-reference: each arrival's first reference drops the cached
//     object, and its mount fetches it again with a quorum GET; that fetch
//     restarts the TTL, so the steady refreshes (at resourceVersion 0) are
//     only those that come before the next arrival. With arrivals a Poisson
//     stream of rate λ and the steady refresh cycle C = 1/steadyRefresh,
//     the refreshes between arrivals come at λ/(e^(λC) − 1), which is
//     steadyRefresh as λ goes to 0; the result is that rate less the
//     steady one, so that steady and churn add up.
//   - watch and csi-driver: the first pod on the node that reads the object
//     opens its watch and the last to leave closes it. The number of such
//     pods is that of an M/G/∞ queue, Poisson with mean ρ = λ·Lifetime, so an
//     arrival finds none with probability e^(−ρ): λ·e^(−ρ) opens per second.
func EntryChurn(b Behaviour, c Churn, steadyRefresh float64) ChurnLoad {
	lambda := c.Arrivals
	if lambda <= 0 {
		return ChurnLoad{}
	}
	switch b {
	case Get, EverySync:
		return ChurnLoad{APIServerGetQPS: lambda, EtcdGetQPS: lambda}
	case FirstReference:
		between := 0.0
		if steadyRefresh > 0 {
			between = lambda / math.Expm1(lambda/steadyRefresh)
		}
		return ChurnLoad{APIServerGetQPS: lambda + between - steadyRefresh, EtcdGetQPS: lambda}
	case Watch, Driver:
		rho := lambda * c.Lifetime.Seconds()
		return ChurnLoad{WatchOpenQPS: lambda * math.Exp(-rho)}
	}
	return ChurnLoad{}
}
