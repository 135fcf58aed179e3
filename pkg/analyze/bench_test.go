package analyze

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/version"

	"github.com/nodeagent-io/nodeagent/pkg/model"
	"github.com/nodeagent-io/nodeagent/pkg/podrefs"
	"github.com/nodeagent-io/nodeagent/pkg/podrefs/inventory"
)

// syntheticCluster is a large cluster: nodes × podsPerNode pods spread
// over 500 namespaces, each pod with its own ConfigMap and Secret, a
// ConfigMap shared by its namespace (in its environment too) and the
// service-account volume's kube-root-ca.crt, on a mix of kubelets: a fifth v1.28 Cache, a fifth
// v1.36 Cache, the rest v1.36 Watch; S = 1 m, T = 300 s (the TTL of a
// cluster this size).
func syntheticCluster(nodes, podsPerNode int) Cluster {
	inv := &inventory.Inventory{SecretsListed: true}
	settings := make(map[string]Settings, nodes)
	for n := range nodes {
		name := fmt.Sprint("node-", n)
		s := Settings{KubeletVersion: "v1.36.3", Version: version.MustParseGeneric("1.36.3"), Strategy: model.StrategyWatch,
			SyncFrequency: time.Minute, TTL: 300 * time.Second, Source: FromConfigz}
		switch n % 5 {
		case 0:
			s.KubeletVersion, s.Version, s.Strategy = "v1.28.15", version.MustParseGeneric("1.28.15"), model.StrategyCache
		case 1:
			s.Strategy = model.StrategyCache
		}
		inv.Nodes = append(inv.Nodes, inventory.NodeInfo{Name: name, KubeletVersion: s.KubeletVersion})
		settings[name] = s
		for p := range podsPerNode {
			ns := fmt.Sprint("team-", (n*podsPerNode+p)%500)
			pod := fmt.Sprintf("pod-%d-%d", n, p)
			// Its environment reads the shared ConfigMap: a finding for
			// every pod (envNeverUpdated), as in make analyze-scale.
			refs := podrefs.Refs{Volumes: []podrefs.Volume{cm(pod), secret(pod), cm("shared"),
				{Name: "kube-api-access", Reads: []podrefs.Ref{{Kind: model.ConfigMap, Name: rootCA}}}},
				Containers: []podrefs.Container{{Name: "app", Env: []podrefs.Ref{{Kind: model.ConfigMap, Name: "shared"}}}}}
			// The own and shared ConfigMaps' volumes could move to the
			// driver; each pod is a workload of its own (the worst case of
			// the breakdown by workload).
			unconverted := []inventory.UnconvertedVolume{{Volume: pod}, {Volume: "shared"}}
			inv.Pods = append(inv.Pods, inventory.PodInfo{Namespace: ns, Name: pod, Node: name, Refs: refs, Unconverted: unconverted, Workload: "Pod/" + pod})
			inv.AddObject(model.ConfigMap, ns, pod, false)
			inv.AddObject(model.Secret, ns, pod, false)
		}
	}
	for i := range 500 {
		inv.AddObject(model.ConfigMap, fmt.Sprint("team-", i), "shared", false)
		inv.AddObject(model.ConfigMap, fmt.Sprint("team-", i), rootCA, false)
	}
	return Cluster{Inventory: inv, Settings: settings}
}

// BenchmarkPredict5000Nodes is the bound: 5,000 nodes and 150,000
// pods predicted, with every what-if, in seconds once the lists are in.
// go test -run '^$' -bench Predict5000 -benchtime 1x ./pkg/analyze
func BenchmarkPredict5000Nodes(b *testing.B) {
	c := syntheticCluster(5000, 30)
	b.ResetTimer()
	for range b.N {
		r := Predict(c, 10)
		if r.Cluster.Pods != 150000 {
			b.Fatalf("%d pods", r.Cluster.Pods)
		}
	}
}

// BenchmarkChange5000Nodes is what one change costs `analyze --serve` on
// that cluster: one node's part recomputed and the whole report summed.
// go test -run '^$' -bench Change5000 ./pkg/analyze
func BenchmarkChange5000Nodes(b *testing.B) {
	c, podsOn, a := servedSynthetic(b)
	for i := 0; b.Loop(); i++ {
		changed := fmt.Sprint("node-", i%5000)
		if n := a.Update(c, podsOn, func(node string) bool { return node == changed }); n != 1 {
			b.Fatalf("%d parts computed, want 1", n)
		}
		if r := a.Result(c); r.Cluster.Pods != 150000 {
			b.Fatalf("%d pods", r.Cluster.Pods)
		}
	}
}

// BenchmarkHeld5000Nodes reports what an Analysis of that cluster holds
// once computed, beside the inventory: held-MiB, live after a collection.
// go test -run '^$' -bench Held5000 -benchtime 1x ./pkg/analyze
func BenchmarkHeld5000Nodes(b *testing.B) {
	c := syntheticCluster(5000, 30)
	podsOn := c.podsOn()
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	for b.Loop() {
		before := heap()
		a := NewAnalysis(10)
		a.Update(c, podsOn, func(string) bool { return true })
		b.ReportMetric(float64(heap()-before)/(1<<20), "held-MiB")
		runtime.KeepAlive(a)
	}
}

// BenchmarkStream5000Nodes is one computation of `analyze --serve` under
// a stream of pod updates: 200 nodes' parts recomputed (100 updates a
// second for the 2 s a computation waits at most) and the report summed.
// go test -run '^$' -bench Stream5000 ./pkg/analyze
func BenchmarkStream5000Nodes(b *testing.B) {
	c, podsOn, a := servedSynthetic(b)
	for i := 0; b.Loop(); i++ {
		dirty := map[string]bool{}
		for j := range 200 {
			dirty[fmt.Sprint("node-", (i*200+j*7919)%5000)] = true
		}
		if n := a.Update(c, podsOn, func(node string) bool { return dirty[node] }); n != len(dirty) {
			b.Fatalf("%d parts computed, want %d", n, len(dirty))
		}
		if r := a.Result(c); r.Cluster.Pods != 150000 {
			b.Fatalf("%d pods", r.Cluster.Pods)
		}
	}
}

// servedSynthetic is the synthetic cluster of 5,000 nodes, its pods by
// node, and its analysis once its first report is made, as `analyze
// --serve` holds it before any change; b's timer starts after.
func servedSynthetic(b *testing.B) (Cluster, PodsOn, *Analysis) {
	c := syntheticCluster(5000, 30)
	podsOn := c.podsOn()
	a := NewAnalysis(10)
	a.Update(c, podsOn, func(string) bool { return true })
	a.Result(c)
	b.ResetTimer()
	return c, podsOn, a
}
