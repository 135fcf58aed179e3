package analyze

import (
	"cmp"
	"fmt"

	"github.com/nodeagent-io/nodeagent/pkg/model"
)

// rootCA is the ConfigMap that kube-controller-manager publishes in every
// namespace and every pod's service-account volume reads.
const rootCA = "kube-root-ca.crt"

// settingsWhatIf is a change of every node's settings an operator can
// make: change returns a node's settings after it, and whether it touches
// the node.
type settingsChange struct {
	name, description string
	change            func(Settings) (Settings, bool)
}

// settingsWhatIfs are the what-ifs that change kubelets' settings, each
// computed node by node (nodePart.whatIfs, in this order).
var settingsWhatIfs = [...]settingsChange{
	{"upgrade-to-v1.29", "every kubelet older than v1.29 that uses the Cache strategy upgraded to v1.29 or later (kubernetes#120255)",
		func(s Settings) (Settings, bool) {
			if s.Strategy != model.StrategyCache || s.Behaviour() != model.EverySync {
				return s, false
			}
			s.Version, _ = model.FirstRelease(model.StrategyCache, model.FirstReference)
			return s, true
		}},
	{"cache-everywhere", "every kubelet on the Cache strategy, at its own version",
		func(s Settings) (Settings, bool) {
			touched := s.Strategy != model.StrategyCache
			s.Strategy = model.StrategyCache
			return s, touched
		}},
	{"watch-everywhere", "every kubelet on the Watch strategy (the kubelet's default)",
		func(s Settings) (Settings, bool) {
			touched := s.Strategy != model.StrategyWatch
			s.Strategy = model.StrategyWatch
			return s, touched
		}},
}

// whatIfs sums the nodes' parts under each change an operator can make;
// secretsMode: move-to-driver assumes the driver's Secrets mode.
func (a *Analysis) whatIfs(top int, secretsMode bool) []WhatIf {
	var out []WhatIf
	for i, w := range settingsWhatIfs {
		r := WhatIf{Name: w.name, Description: w.description}
		var sum kindLoads
		var delay []model.DelayGroup
		for _, p := range a.inOrder() {
			if p.whatIfs[i].touched {
				r.Nodes++
			}
			addKindLoads(&sum, p.whatIfs[i].load)
			delay = append(delay, p.whatIfs[i].delay...)
		}
		r.Predicted = sum.kinds()
		if d, ok := model.DelayOf(delay); ok {
			r.UpdateDelay = &d
		}
		out = append(out, r)
	}
	out = append(out, a.immutableTop(top))
	return append(out, a.moveToDriver(top, secretsMode))
}

// immutableTop is the what-if of the top mutable objects by watches
// marked immutable: the loads of the nodes that read them recomputed
// with those objects immutable, the others' as they are.
func (a *Analysis) immutableTop(top int) WhatIf {
	marked := a.immutableCandidates(top)
	r := WhatIf{
		Name:        fmt.Sprintf("immutable-top-%d", top),
		Description: fmt.Sprintf("the %d most watched mutable objects marked immutable (%s is left out: its controller updates it)", len(marked), rootCA),
		Caveat:      "an immutable object cannot change: a new version needs a new name, and one deleted and recreated under the same name stays stale on the nodes that had it (kubernetes#131589); only watches are saved, the Cache and Get strategies ignore immutability",
		UpdateDelay: a.totalDelay(),
	}
	reading := map[string]bool{}
	for o := range marked {
		for _, node := range a.objectSums.nodesOf(o) {
			reading[node] = true
		}
	}
	var sum kindLoads
	for _, p := range a.inOrder() {
		if p.settings.Strategy == model.StrategyWatch {
			r.Nodes++
		}
		if !reading[p.info.Name] {
			addKindLoads(&sum, p.load)
			continue
		}
		var node kindLoads
		for _, o := range p.objects {
			if marked[plain(o.object)] {
				o.object.Immutable = true
			}
			l := o.loadOn(p.node)
			node.add(o.object.Kind, l)
		}
		addKindLoads(&sum, node)
	}
	r.Predicted = sum.kinds()
	return r
}

// immutableCandidates are the top mutable objects by watches (then by
// GET/s, then by name), but the root CA bundle.
func (a *Analysis) immutableCandidates(top int) map[model.Object]bool {
	byWatches := func(x, y model.ObjectLoad) int {
		if x.Watches != y.Watches {
			return cmp.Compare(y.Watches, x.Watches)
		}
		return model.CompareObjectLoads(x, y)
	}
	marked := map[model.Object]bool{}
	for _, o := range a.topObjects(top, byWatches, func(o model.ObjectLoad) bool {
		return o.Watches > 0 && !o.Object.Immutable && o.Object.Name != rootCA
	}) {
		marked[plain(o.Object)] = true
	}
	return marked
}

func plain(o model.Object) model.Object {
	return model.Object{Kind: o.Kind, Namespace: o.Namespace, Name: o.Name}
}

// Rotation is what one update of kube-root-ca.crt in every namespace (a
// rotation of the cluster's root CA) sets off at once.
type Rotation struct {
	// Namespaces is how many namespaces' copies pods read.
	Namespaces int `json:"namespaces"`
	// WatchEvents is the watches that deliver the update together: one
	// per node and namespace on the Watch strategy.
	WatchEvents int `json:"watchEvents"`
	// Volumes is the pods' volumes that must be rewritten.
	Volumes int `json:"volumes"`
	// CacheRefreshes is the GETs that bring the new bundle to nodes on
	// the Cache strategy, within one TTL: one per node and namespace.
	CacheRefreshes int `json:"cacheRefreshes"`
	// SpreadSeconds is how long until the last volume has the new bundle:
	// the slowest node's TTL (on Cache) plus its longest sync interval.
	SpreadSeconds float64 `json:"spreadSeconds"`
}

// rotationPart is one node's share of a rotation: its volumes that read
// the bundle, the namespaces whose copies they read, and its spread.
type rotationPart struct {
	volumes, watchEvents, cacheRefreshes int
	namespaces                           []string
	spread                               float64
}

// rotationOf is node n's part of a rotation, n with its pods.
func rotationOf(n model.Node) rotationPart {
	var r rotationPart
	entries := map[string]bool{}
	for _, p := range n.Pods {
		for _, o := range p.Reads {
			if o.Kind == model.ConfigMap && o.Name == rootCA {
				r.volumes++
				entries[o.Namespace] = true
			}
		}
	}
	if len(entries) == 0 {
		return r
	}
	for ns := range entries {
		r.namespaces = append(r.namespaces, ns)
	}
	r.spread = 1.5*n.SyncFrequency.Seconds() + 1
	switch n.Behaviour {
	case model.Watch:
		r.watchEvents = len(entries)
	case model.FirstReference:
		r.cacheRefreshes = len(entries)
		r.spread += n.TTL.Seconds()
	}
	return r
}

// rootCARotation sums the nodes' parts of a rotation.
func (a *Analysis) rootCARotation() Rotation {
	var r Rotation
	namespaces := map[string]bool{}
	for _, p := range a.inOrder() {
		part := p.rootCA
		r.Volumes += part.volumes
		r.WatchEvents += part.watchEvents
		r.CacheRefreshes += part.cacheRefreshes
		r.SpreadSeconds = max(r.SpreadSeconds, part.spread)
		for _, ns := range part.namespaces {
			namespaces[ns] = true
		}
	}
	r.Namespaces = len(namespaces)
	return r
}
