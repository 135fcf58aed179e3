package analyze

import (
	"fmt"
	"sort"

	"github.com/nodeagent-io/nodeagent/pkg/model"
)

// rootCA is the ConfigMap that kube-controller-manager publishes in every
// namespace and every pod's service-account volume reads.
const rootCA = "kube-root-ca.crt"

// whatIfs predicts the cluster under each change an operator can make.
func whatIfs(c Cluster, pods map[string][]model.Pod, gathered map[string]*model.Reads, now model.Prediction, shares map[string]map[int]int, top int) []WhatIf {
	var out []WhatIf
	// gathered are pods' reads gathered by node: a what-if that changes
	// the pods themselves passes none.
	change := func(name, description, caveat string, settings func(Settings) (Settings, bool), pods map[string][]model.Pod, gathered map[string]*model.Reads) {
		touched := 0
		changed := map[string]Settings{}
		for _, n := range c.Inventory.Nodes {
			s, ok := settings(c.Settings[n.Name])
			if ok {
				touched++
			}
			changed[n.Name] = s
		}
		nodes := c.modelNodes(func(name string) Settings { return changed[name] }, pods, gathered)
		_, byKind := model.Totals(nodes)
		delay, _ := clusterDelay(nodes, shares)
		out = append(out, WhatIf{Name: name, Description: description, Nodes: touched, Predicted: kindsOf(byKind), UpdateDelay: delay, Caveat: caveat})
	}
	change("upgrade-to-v1.29", "every kubelet older than v1.29 that uses the Cache strategy upgraded to v1.29 or later (kubernetes#120255)", "",
		func(s Settings) (Settings, bool) {
			if s.Strategy != model.StrategyCache || s.Behaviour() != model.EverySync {
				return s, false
			}
			s.Version, _ = model.FirstRelease(model.StrategyCache, model.FirstReference)
			return s, true
		}, pods, gathered)
	change("cache-everywhere", "every kubelet on the Cache strategy, at its own version", "",
		func(s Settings) (Settings, bool) {
			touched := s.Strategy != model.StrategyCache
			s.Strategy = model.StrategyCache
			return s, touched
		}, pods, gathered)
	change("watch-everywhere", "every kubelet on the Watch strategy (the kubelet's default)", "",
		func(s Settings) (Settings, bool) {
			touched := s.Strategy != model.StrategyWatch
			s.Strategy = model.StrategyWatch
			return s, touched
		}, pods, gathered)
	marked := immutableCandidates(now, top)
	description := fmt.Sprintf("the %d most watched mutable objects marked immutable (%s is left out: its controller updates it)", len(marked), rootCA)
	change(fmt.Sprintf("immutable-top-%d", top), description,
		"an immutable object cannot change: a new version needs a new name, and one deleted and recreated under the same name stays stale on the nodes that had it (kubernetes#131589); only watches are saved, the Cache and Get strategies ignore immutability",
		func(s Settings) (Settings, bool) { return s, s.Strategy == model.StrategyWatch },
		markImmutable(pods, marked), nil)
	if w := c.moveToDriver(shares, gathered, top); w != nil {
		out = append(out, *w)
	}
	return out
}

// immutableCandidates are the top mutable objects by watches, but the
// root CA bundle.
func immutableCandidates(p model.Prediction, top int) map[model.Object]bool {
	objects := append([]model.ObjectLoad(nil), p.Objects...)
	sort.SliceStable(objects, func(i, j int) bool { return objects[i].Watches > objects[j].Watches })
	marked := map[model.Object]bool{}
	for _, o := range objects {
		if len(marked) == top || o.Watches == 0 {
			break
		}
		if o.Object.Immutable || o.Object.Name == rootCA {
			continue
		}
		marked[plain(o.Object)] = true
	}
	return marked
}

func plain(o model.Object) model.Object {
	return model.Object{Kind: o.Kind, Namespace: o.Namespace, Name: o.Name}
}

// markImmutable is pods with every read of a marked object immutable.
func markImmutable(pods map[string][]model.Pod, marked map[model.Object]bool) map[string][]model.Pod {
	out := make(map[string][]model.Pod, len(pods))
	for node, ps := range pods {
		changed := make([]model.Pod, len(ps))
		for i, p := range ps {
			changed[i] = p
			changed[i].Reads = append([]model.Object(nil), p.Reads...)
			for j, o := range changed[i].Reads {
				if marked[plain(o)] {
					changed[i].Reads[j].Immutable = true
				}
			}
		}
		out[node] = changed
	}
	return out
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

func rootCARotation(nodes []model.Node) Rotation {
	var r Rotation
	namespaces := map[string]bool{}
	for _, n := range nodes {
		entries := map[string]bool{}
		for _, p := range n.Pods {
			for _, o := range p.Reads {
				if o.Kind == model.ConfigMap && o.Name == rootCA {
					r.Volumes++
					entries[o.Namespace] = true
					namespaces[o.Namespace] = true
				}
			}
		}
		if len(entries) == 0 {
			continue
		}
		spread := 1.5*n.SyncFrequency.Seconds() + 1
		switch n.Behaviour {
		case model.Watch:
			r.WatchEvents += len(entries)
		case model.FirstReference:
			r.CacheRefreshes += len(entries)
			spread += n.TTL.Seconds()
		}
		r.SpreadSeconds = max(r.SpreadSeconds, spread)
	}
	r.Namespaces = len(namespaces)
	return r
}
