package model

import (
	"fmt"
	"math"
	"testing"
	"time"
)

func within(t *testing.T, what string, got, want, tolerance float64) {
	t.Helper()
	if math.Abs(got-want) > tolerance*want {
		t.Errorf("%s: got %.5f, want %.5f ± %.0f%%", what, got, want, tolerance*100)
	}
}

// The simulation meets docs/model.md's closed forms where they hold.
func TestRefreshRateMatchesClosedForms(t *testing.T) {
	// The closed form is the renewal process's limit: it holds once T is
	// many sync intervals (here at least eight).
	for _, tt := range []struct{ s, ttl time.Duration }{
		{5 * time.Second, 60 * time.Second},
		{60 * time.Second, 900 * time.Second},
		{time.Second, 30 * time.Second},
	} {
		mean, meanSquare := SyncIntervalMoments(tt.s)
		// T ≫ S: one refresh per T plus the mean residual life.
		within(t, "S="+tt.s.String()+" T="+tt.ttl.String(), RefreshRate(tt.s, tt.ttl, 1), 1/(tt.ttl.Seconds()+meanSquare/(2*mean)), 0.02)
	}
	// T below one sync interval: every remount refreshes.
	mean, _ := SyncIntervalMoments(time.Minute)
	within(t, "S=60s T=15s", RefreshRate(time.Minute, 15*time.Second, 1), 1/mean, 0.01)
	within(t, "T=0", RefreshRate(5*time.Second, 0, 1), 1/6.75, 0.01)
	// T = 0 with k pods: every pod's remount refreshes.
	within(t, "T=0, 3 pods", RefreshRate(5*time.Second, 0, 3), 3/6.75, 0.01)
	// An entry shared by more pods is refreshed sooner after it expires,
	// never more than once per T; ten pods sharing one entry cost far
	// less than ten entries.
	one, shared := RefreshRate(5*time.Second, 25*time.Second, 1), RefreshRate(5*time.Second, 25*time.Second, 10)
	if shared <= one || shared > 1/25.0 || shared > 2*one {
		t.Errorf("10 pods sharing: %.4f refreshes/s; want above one pod's %.4f, at most 1/T and far below 10 entries' %.4f", shared, one, 10*one)
	}
	// Deterministic.
	if RefreshRate(5*time.Second, 25*time.Second, 1) != one {
		t.Error("RefreshRate is not deterministic")
	}
}

// Pods of a node that share an object and come due in the same tick share
// one quorum GET with EverySync: ten pods at S = 5 s send about 0.80 GET/s
// (1 - (1 - 1/6.75)^10 if the ticks were independent), not 10/6.75.
func TestSyncTickRate(t *testing.T) {
	within(t, "one pod", SyncTickRate(5*time.Second, 1), 1/6.75, 0.001)
	within(t, "ten pods, S=5s", SyncTickRate(5*time.Second, 10), 0.80, 0.03)
	within(t, "two pods, S=60s", SyncTickRate(time.Minute, 2), 1-(1-1/75.5)*(1-1/75.5), 0.02)
	// At S = 2 s every interval is exactly 3 ticks: five pods cover each
	// of the 3 phases with probability 1 - (2/3)^5.
	within(t, "five pods, S=2s", SyncTickRate(2*time.Second, 5), 1-math.Pow(2.0/3, 5), 0.02)
	if r := SyncTickRate(time.Second, 50); r > 1 || r < 0.99 {
		t.Errorf("50 pods at S=1s: %.3f GET/s, want just under one per tick", r)
	}
	if SyncTickRate(5*time.Second, 10) != SyncTickRate(5*time.Second, 10) {
		t.Error("SyncTickRate is not deterministic")
	}
}

// demoNodes is `make demo`'s layout: 20 nodes × 10 pods, each with its own
// ConfigMap and, with sa, the service-account volume reading the
// namespace's kube-root-ca.crt.
func demoNodes(b Behaviour, ttl time.Duration, sa bool) []Node {
	nodes := make([]Node, 20)
	for n := range nodes {
		nodes[n] = Node{Name: fmt.Sprintf("node-%d", n), SyncFrequency: 5 * time.Second, TTL: ttl, Behaviour: b}
		for p := range 10 {
			pod := Pod{Name: fmt.Sprintf("pod-%d-%d", n, p), Volumes: 1,
				Reads: []Object{{Kind: ConfigMap, Namespace: "demo", Name: fmt.Sprintf("cm-%d-%d", n, p)}}}
			if sa {
				pod.Volumes++
				pod.Reads = append(pod.Reads, Object{Kind: ConfigMap, Namespace: "demo", Name: "kube-root-ca.crt"})
			}
			nodes[n].Pods = append(nodes[n].Pods, pod)
		}
	}
	return nodes
}

func TestPredict(t *testing.T) {
	const S, T = 5 * time.Second, 25 * time.Second
	total := func(b Behaviour, ttl time.Duration, sa bool) Load { return Predict(demoNodes(b, ttl, sa)).Total }

	l := total(EverySync, T, false)
	within(t, "every-sync apiserver", l.APIServerGetQPS, 200/6.75, 0.001)
	within(t, "every-sync etcd", l.EtcdGetQPS, 200/6.75, 0.001)
	l = total(FirstReference, T, false)
	within(t, "first-reference apiserver", l.APIServerGetQPS, 200*RefreshRate(S, T, 1), 0.001)
	if l.EtcdGetQPS != 0 || l.Watches != 0 {
		t.Errorf("first-reference: etcd %v, watches %d; want none", l.EtcdGetQPS, l.Watches)
	}
	if l = total(Watch, T, false); l.APIServerGetQPS != 0 || l.EtcdGetQPS != 0 || l.Watches != 200 {
		t.Errorf("watch: %+v, want no GETs and one watch per ConfigMap per node (200)", l)
	}

	// The service-account volume adds one kube-root-ca.crt per node,
	// shared by the node's ten pods.
	if v := demoNodes(EverySync, T, true)[0].Volumes(); v != 20 {
		t.Errorf("volumes per node with the service-account volume: %d, want 20", v)
	}
	l = total(EverySync, T, true)
	within(t, "every-sync with the root CA", l.APIServerGetQPS, 200/6.75+20*SyncTickRate(S, 10), 0.001)
	within(t, "every-sync etcd with the root CA", l.EtcdGetQPS, l.APIServerGetQPS, 0)
	l = total(FirstReference, T, true)
	within(t, "first-reference with the root CA", l.APIServerGetQPS, 200*RefreshRate(S, T, 1)+20*RefreshRate(S, T, 10), 0.001)
	l = total(Get, T, true)
	within(t, "get with the root CA", l.APIServerGetQPS, 400/6.75, 0.001)
	if l = total(Watch, T, true); l.Watches != 220 {
		t.Errorf("watch with the root CA: %d watches, want 220 (one root CA per node)", l.Watches)
	}

	// At T = 0 nothing is fresh: etcd still sees one quorum GET per tick
	// for the shared root CA, and the apiserver every remount, the others
	// at resourceVersion "0".
	l = total(EverySync, 0, true)
	within(t, "every-sync apiserver at T = 0", l.APIServerGetQPS, 400/6.75, 0.001)
	within(t, "every-sync etcd at T = 0", l.EtcdGetQPS, 200/6.75+20*SyncTickRate(S, 10), 0.001)
}

// Per node and per object add up to the total; the shared root CA is the
// costliest object, read on every node.
func TestPredictBreakdown(t *testing.T) {
	p := Predict(demoNodes(EverySync, 25*time.Second, true))
	var nodes, objects Load
	for _, n := range p.Nodes {
		nodes.Add(n.Load)
	}
	for _, o := range p.Objects {
		objects.Add(o.Load)
	}
	within(t, "nodes' sum", nodes.APIServerGetQPS, p.Total.APIServerGetQPS, 1e-9)
	within(t, "objects' sum", objects.APIServerGetQPS, p.Total.APIServerGetQPS, 1e-9)
	if len(p.Nodes) != 20 || len(p.Objects) != 201 {
		t.Fatalf("%d nodes, %d objects; want 20 and 201 (200 ConfigMaps and the root CA)", len(p.Nodes), len(p.Objects))
	}
	top := p.Objects[0]
	if top.Object.Name != "kube-root-ca.crt" || top.Nodes != 20 {
		t.Errorf("costliest object %v on %d nodes, want kube-root-ca.crt on 20", top.Object, top.Nodes)
	}
	within(t, "root CA", top.APIServerGetQPS, 20*SyncTickRate(5*time.Second, 10), 1e-9)
}

// Secrets cost what ConfigMaps cost; an immutable object is not watched.
func TestPredictSecretsAndImmutable(t *testing.T) {
	node := Node{Name: "n", SyncFrequency: time.Minute, TTL: 0, Behaviour: Watch, Pods: []Pod{{
		Name: "p", Volumes: 3, Reads: []Object{
			{Kind: ConfigMap, Namespace: "a", Name: "x"},
			{Kind: Secret, Namespace: "a", Name: "x"},
			{Kind: ConfigMap, Namespace: "a", Name: "frozen", Immutable: true},
		},
	}}}
	if w := Predict([]Node{node}).Total.Watches; w != 2 {
		t.Errorf("%d watches, want 2: the ConfigMap and the Secret of one name, not the immutable one", w)
	}
	node.Behaviour = Get
	within(t, "get, three reads", Predict([]Node{node}).Total.EtcdGetQPS, 3/75.5, 0.001)
}

func TestQuantile(t *testing.T) {
	sorted := make([]float64, 100)
	for i := range sorted {
		sorted[i] = float64(i + 1)
	}
	for _, c := range []struct{ q, want float64 }{{0.5, 50}, {0.99, 99}, {1, 100}, {0, 1}} {
		if got := Quantile(sorted, c.q); got != c.want {
			t.Errorf("Quantile(%v) = %v, want %v", c.q, got, c.want)
		}
	}
	if Quantile(nil, 0.5) != 0 {
		t.Error("Quantile of nothing is not 0")
	}
}

// The model against what can be worked out by hand: at the next sync, the
// wait is the forward recurrence time of the sync process, whose mean is
// E[X²]/2E[X]; a TTL-driven cache adds to it, and a TTL of zero does not.
func TestUpdateLatency(t *testing.T) {
	s := time.Minute
	p50, p99, bound := UpdateLatency(Watch, s, 0, 20)
	mean, meanSquare := SyncIntervalMoments(s)
	residual := meanSquare / (2 * mean) // 38.3 s
	if p50 < 0.8*residual || p50 > 1.2*residual {
		t.Errorf("watch p50 %.1fs, want near the mean forward recurrence %.1fs", p50, residual)
	}
	if p99 > bound || bound != 1.5*60+1+maxRemountDelay {
		t.Errorf("p99 %.1fs, bound %.2fs: want p99 within the bound 91.15s", p99, bound)
	}
	if e50, _, _ := UpdateLatency(EverySync, s, 25*time.Second, 20); math.Abs(e50-p50) > 0.05*p50 {
		t.Errorf("every-sync p50 %.1fs, want the same as watch's %.1fs: both take the update at the next sync", e50, p50)
	}
	f50, f99, fBound := UpdateLatency(FirstReference, s, 25*time.Second, 20)
	if f50 <= p50 || f99 > fBound || fBound != bound+25 {
		t.Errorf("first-reference p50 %.1fs p99 %.1fs bound %.1fs: want later than at the next sync (%.1fs), within TTL + the sync bound", f50, f99, fBound, p50)
	}
	if z50, _, _ := UpdateLatency(FirstReference, s, 0, 20); math.Abs(z50-p50) > 0.05*p50 {
		t.Errorf("first-reference at TTL 0: p50 %.1fs, want the next sync's %.1fs", z50, p50)
	}
}

// A node's update delay pools its reads: one group alone gives that
// group's median; the longest is the bound of the slowest group.
func TestDelayOf(t *testing.T) {
	s := time.Minute
	watchOnly, ok := DelayOf([]DelayGroup{{Behaviour: Watch, SyncFrequency: s, K: 1, Weight: 3}})
	p50, _, bound := UpdateLatency(Watch, s, 0, 1)
	if !ok || math.Abs(watchOnly.Median-p50) > 0.01 || watchOnly.Max != bound {
		t.Errorf("watch alone: %+v, want median %.2f and max %.2f", watchOnly, p50, bound)
	}
	cached := DelayGroup{Behaviour: FirstReference, SyncFrequency: s, TTL: 5 * time.Minute, K: 1, Weight: 1}
	mixed, _ := DelayOf([]DelayGroup{{Behaviour: Watch, SyncFrequency: s, K: 1, Weight: 1}, cached})
	alone, _ := DelayOf([]DelayGroup{cached})
	if !(watchOnly.Median < mixed.Median && mixed.Median < alone.Median) || mixed.Max != alone.Max || alone.Max != 1.5*60+1+0.15+300 {
		t.Errorf("watch %+v, mixed %+v, cache alone %+v: want the mixture's median between, its max the cache's T + 1.5·S + 1 s + 150 ms", watchOnly, mixed, alone)
	}
	if _, ok := DelayOf(nil); ok {
		t.Error("DelayOf(nil) is ok")
	}
}
