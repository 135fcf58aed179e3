package analyze

import (
	"fmt"
	"math"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/version"

	"github.com/nodeagent-io/nodeagent/pkg/model"
	"github.com/nodeagent-io/nodeagent/pkg/podrefs"
	"github.com/nodeagent-io/nodeagent/pkg/podrefs/inventory"
)

func near(t *testing.T, what string, got, want float64) {
	t.Helper()
	if math.Abs(got-want) > 0.01*want+1e-9 {
		t.Errorf("%s: got %.5f, want %.5f", what, got, want)
	}
}

// cm and secret are volumes reading one object.
func cm(name string) podrefs.Volume {
	return podrefs.Volume{Name: name, Reads: []podrefs.Ref{{Kind: model.ConfigMap, Name: name}}}
}

func secret(name string) podrefs.Volume {
	return podrefs.Volume{Name: name, Reads: []podrefs.Ref{{Kind: model.Secret, Name: name}}}
}

// oneNode is a cluster of one node with the given kubelet and pods, every
// object they name existing in namespace ns.
func oneNode(v string, strategy model.Strategy, s, ttl time.Duration, pods ...podrefs.Refs) Cluster {
	inv := &inventory.Inventory{SecretsListed: true, Nodes: []inventory.NodeInfo{{Name: "node", KubeletVersion: v}}}
	for i, refs := range pods {
		inv.Pods = append(inv.Pods, inventory.PodInfo{Namespace: "ns", Name: fmt.Sprint("pod-", i), Node: "node", Refs: refs})
		for _, vol := range refs.Volumes {
			for _, r := range vol.Reads {
				inv.AddObject(r.Kind, "ns", r.Name, false)
			}
		}
	}
	settings := Settings{KubeletVersion: v, Version: version.MustParseGeneric(v), Strategy: strategy, SyncFrequency: s, TTL: ttl, Source: FromConfigz}
	return Cluster{Inventory: inv, Settings: map[string]Settings{"node": settings}}
}

// Each version × strategy × TTL regime, for one pod reading one ConfigMap
// and one Secret, against the arithmetic of docs/model.md. S = 60 s, so a
// sync interval is 1.25·60 + 0.5 = 75.5 s on average.
func TestPredictRegimes(t *testing.T) {
	pod := podrefs.Refs{Volumes: []podrefs.Volume{cm("config"), secret("tls")}}
	const mean = 75.5
	meanSquare := (30.0*30.0/12 + 1.0/12) + mean*mean
	long := 1 / (300 + meanSquare/(2*mean)) // T = 300 s ≫ S: one refresh per T and the residual
	for _, tt := range []struct {
		name              string
		version           string
		strategy          model.Strategy
		ttl               time.Duration
		apiserver, quorum float64 // per kind
		watches           int
	}{
		{"v1.28 Cache, T = 0", "1.28.15", model.StrategyCache, 0, 1 / mean, 1 / mean, 0},
		{"v1.28 Cache, T = 300 s", "1.28.15", model.StrategyCache, 300 * time.Second, 1 / mean, 1 / mean, 0},
		{"v1.36 Cache, T = 0", "1.36.3", model.StrategyCache, 0, 1 / mean, 0, 0},
		{"v1.36 Cache, T = 15 s < S", "1.36.3", model.StrategyCache, 15 * time.Second, 1 / mean, 0, 0},
		{"v1.36 Cache, T = 300 s", "1.36.3", model.StrategyCache, 300 * time.Second, long, 0, 0},
		{"v1.36 Get", "1.36.3", model.StrategyGet, 300 * time.Second, 1 / mean, 1 / mean, 0},
		{"v1.28 Get", "1.28.15", model.StrategyGet, 0, 1 / mean, 1 / mean, 0},
		{"v1.36 Watch", "1.36.3", model.StrategyWatch, 300 * time.Second, 0, 0, 1},
		{"v1.28 Watch", "1.28.15", model.StrategyWatch, 0, 0, 0, 1},
	} {
		r := Predict(oneNode(tt.version, tt.strategy, time.Minute, tt.ttl, pod), 10)
		for kind, rates := range map[string]Rates{"ConfigMaps": r.Total.Predicted.ConfigMaps, "Secrets": r.Total.Predicted.Secrets} {
			what := tt.name + ", " + kind
			near(t, what+" apiserver GET/s", rates.APIServerGets, tt.apiserver)
			near(t, what+" quorum GET/s", rates.QuorumGets, tt.quorum)
			if rates.Watches != tt.watches {
				t.Errorf("%s: %d watches, want %d", what, rates.Watches, tt.watches)
			}
		}
	}
	// Watches are opened again at their timeout: 30 to 60 minutes from
	// v1.31, 5 to 10 before.
	r := Predict(oneNode("1.28.15", model.StrategyWatch, time.Minute, 0, pod), 10)
	near(t, "v1.28 re-watches/s", r.Total.Predicted.Sum().WatchRequests, 2/450.0)
}

// Objects that pods share are one cache entry and one watch per node;
// environment-only references cost nothing in steady state; immutable
// objects are not watched; missing ones are fetched on every remount, or
// at the mount's retry interval where they fail the volume.
func TestPredictSharingAndSpecialObjects(t *testing.T) {
	shared := podrefs.Refs{Volumes: []podrefs.Volume{cm("shared")}, Containers: []podrefs.Container{{Name: "app", Env: []podrefs.Ref{{Kind: model.Secret, Name: "env-only"}}}}}
	c := oneNode("1.36.3", model.StrategyGet, time.Minute, 0, shared, shared, shared)
	near(t, "Get, three pods reading one ConfigMap", Predict(c, 10).Total.Predicted.ConfigMaps.APIServerGets, 3/75.5)
	if s := Predict(c, 10).Total.Predicted.Secrets; s.APIServerGets != 0 || s.Watches != 0 {
		t.Errorf("an environment-only Secret costs %+v, want nothing", s)
	}
	c = oneNode("1.36.3", model.StrategyWatch, time.Minute, 0, shared, shared, shared)
	if w := Predict(c, 10).Total.Predicted.ConfigMaps.Watches; w != 1 {
		t.Errorf("Watch, three pods reading one ConfigMap: %d watches, want 1", w)
	}
	c.Inventory.AddObject(model.ConfigMap, "ns", "shared", true)
	if w := Predict(c, 10).Total.Predicted.ConfigMaps.Watches; w != 0 {
		t.Errorf("an immutable ConfigMap: %d watches, want 0", w)
	}

	optional := podrefs.Refs{Volumes: []podrefs.Volume{{Name: "opt", Reads: []podrefs.Ref{{Kind: model.ConfigMap, Name: "gone", Optional: true}}}}}
	required := podrefs.Refs{Volumes: []podrefs.Volume{{Name: "req", Reads: []podrefs.Ref{{Kind: model.ConfigMap, Name: "gone"}}}}}
	c = oneNode("1.36.3", model.StrategyCache, time.Minute, 300*time.Second)
	c.Inventory.Pods = []inventory.PodInfo{{Namespace: "ns", Name: "a", Node: "node", Refs: optional}}
	r := Predict(c, 10)
	near(t, "a missing optional ConfigMap, apiserver", r.Total.Predicted.ConfigMaps.APIServerGets, 1/75.5)
	near(t, "a missing optional ConfigMap, quorum", r.Total.Predicted.ConfigMaps.QuorumGets, 1/75.5)
	if !r.Objects[0].Missing {
		t.Errorf("the missing ConfigMap is not marked missing: %+v", r.Objects[0])
	}
	c.Inventory.Pods = []inventory.PodInfo{{Namespace: "ns", Name: "a", Node: "node", Refs: required}}
	near(t, "a missing required ConfigMap", Predict(c, 10).Total.Predicted.ConfigMaps.QuorumGets, 1/122.0)
}

// The demo's layout (20 nodes × 10 pods, S = 5 s, T = 25 s, each pod with
// its own ConfigMap and the namespace's kube-root-ca.crt) gives the
// figures docs/model.md derives and compare measures, and each what-if
// moves them the way the kubelet's history says.
func TestPredictDemoAndWhatIfs(t *testing.T) {
	inv := &inventory.Inventory{SecretsListed: true}
	settings := map[string]Settings{}
	for n := range 20 {
		node := fmt.Sprint("node-", n)
		inv.Nodes = append(inv.Nodes, inventory.NodeInfo{Name: node, KubeletVersion: "v1.28.15"})
		settings[node] = Settings{KubeletVersion: "v1.28.15", Version: version.MustParseGeneric("1.28.15"), Strategy: model.StrategyCache,
			SyncFrequency: 5 * time.Second, TTL: 25 * time.Second, Source: FromConfigz}
		for p := range 10 {
			name := fmt.Sprintf("cm-%d-%d", n, p)
			inv.AddObject(model.ConfigMap, "demo", name, false)
			inv.Pods = append(inv.Pods, inventory.PodInfo{Namespace: "demo", Name: name, Node: node, Refs: podrefs.Refs{Volumes: []podrefs.Volume{
				cm(name), {Name: "kube-api-access", Reads: []podrefs.Ref{{Kind: model.ConfigMap, Name: rootCA}}}}}})
		}
	}
	inv.AddObject(model.ConfigMap, "demo", rootCA, false)
	r := Predict(Cluster{Inventory: inv, Settings: settings}, 3)
	near(t, "every-sync apiserver GET/s", r.Total.Predicted.ConfigMaps.APIServerGets, 45.58)
	if r.Objects[0].Name != rootCA || r.Objects[0].Nodes != 20 || len(r.Objects) != 3 || len(r.Namespaces) != 1 {
		t.Errorf("top objects %+v, namespaces %+v; want kube-root-ca.crt first, on 20 nodes, three objects, one namespace", r.Objects, r.Namespaces)
	}
	byName := map[string]WhatIf{}
	for _, w := range r.WhatIfs {
		byName[w.Name] = w
	}
	upgrade := byName["upgrade-to-v1.29"].Predicted.ConfigMaps
	near(t, "upgraded apiserver GET/s", upgrade.APIServerGets, 7.99)
	if upgrade.EtcdReads != 0 || byName["upgrade-to-v1.29"].Nodes != 20 {
		t.Errorf("upgraded: %+v on %d nodes; want no etcd reads, 20 nodes", upgrade, byName["upgrade-to-v1.29"].Nodes)
	}
	if w := byName["watch-everywhere"].Predicted.ConfigMaps; w.APIServerGets != 0 || w.Watches != 220 {
		t.Errorf("watch everywhere: %+v; want no GETs, 220 watches (200 own ConfigMaps, 20 nodes' kube-root-ca.crt)", w)
	}
	if w := byName["cache-everywhere"]; w.Nodes != 0 {
		t.Errorf("cache everywhere on a Cache cluster changed %d nodes", w.Nodes)
	}
	near(t, "cache everywhere on a Cache cluster", byName["cache-everywhere"].Predicted.Sum().APIServerGets, r.Total.Predicted.Sum().APIServerGets)
	rot := r.RootCARotation
	if rot.Namespaces != 1 || rot.Volumes != 200 || rot.WatchEvents != 0 || rot.SpreadSeconds != 8.5 {
		t.Errorf("rotation %+v; want 1 namespace, 200 volumes, no watch events, 8.5 s", rot)
	}
}

// Marking the most watched objects immutable saves their watches and
// leaves kube-root-ca.crt alone.
func TestImmutableWhatIf(t *testing.T) {
	pods := []podrefs.Refs{}
	for i := range 4 {
		pods = append(pods, podrefs.Refs{Volumes: []podrefs.Volume{cm(fmt.Sprint("cm-", i)), cm(rootCA)}})
	}
	r := Predict(oneNode("1.36.3", model.StrategyWatch, time.Minute, 0, pods...), 2)
	var immutable WhatIf
	for _, w := range r.WhatIfs {
		if w.Name == "immutable-top-2" {
			immutable = w
		}
	}
	if now, then := r.Total.Predicted.ConfigMaps.Watches, immutable.Predicted.ConfigMaps.Watches; now != 5 || then != 3 || immutable.Caveat == "" {
		t.Errorf("watches now %d, with the top 2 immutable %d (caveat %q); want 5 and 3, with a caveat", now, then, immutable.Caveat)
	}
	if r.RootCARotation.WatchEvents != 1 {
		t.Errorf("rotation: %d watch events, want 1", r.RootCARotation.WatchEvents)
	}
}

// A saving is shown in whole percent, and one that rounds to nothing as 0,
// not as "+0%".
func TestSaving(t *testing.T) {
	for _, tt := range []struct {
		now, then float64
		want      string
	}{
		{10, 5, "-50%"}, {10, 15, "+50%"}, {10, 10, "0"}, {7.59, 7.5900001, "0"}, {0, 2, "+2.00"}, {0, 0, "0"},
	} {
		if got := saving(tt.now, tt.then); got != tt.want {
			t.Errorf("saving(%v, %v) = %q, want %q", tt.now, tt.then, got, tt.want)
		}
	}
}
