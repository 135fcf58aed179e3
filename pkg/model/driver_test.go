package model

import (
	"testing"
	"time"
)

// nodeagent's CSI driver: one watch per object on the node whatever the
// number of volumes reading it, immutable objects included, no GET; and an
// update within the reconciler's half period, whatever S and T.
func TestDriverLoadAndDelay(t *testing.T) {
	shared := Object{Kind: ConfigMap, Namespace: "ns", Name: "shared"}
	frozen := Object{Kind: ConfigMap, Namespace: "ns", Name: "frozen", Immutable: true}
	node := Node{Name: "n", Behaviour: Driver, SyncFrequency: time.Minute, TTL: time.Minute, WatchLifetime: 45 * time.Minute, Pods: []Pod{
		{Name: "a", Volumes: 2, Reads: []Object{shared, frozen}},
		{Name: "b", Volumes: 1, Reads: []Object{shared}},
		{Name: "c", Volumes: 1, Reads: []Object{shared}},
	}}
	p := Predict([]Node{node})
	if got := p.Total; got.Watches != 2 || got.APIServerGetQPS != 0 || got.EtcdGetQPS != 0 {
		t.Errorf("load %+v, want 2 watches (shared and the immutable frozen) and no GET", got)
	}
	within(t, "watch requests", p.Total.WatchRequestQPS, 2/(45*time.Minute).Seconds(), 0.001)
	// The kubelet's Watch strategy on the same node keeps no watch of the
	// immutable object.
	node.Behaviour = Watch
	if got := Predict([]Node{node}).Total.Watches; got != 1 {
		t.Errorf("the kubelet's Watch: %d watches, want 1", got)
	}

	p50, p99, bound := UpdateLatency(Driver, time.Minute, time.Minute, 3)
	within(t, "median", p50, driverMaxWait/2, 0.01)
	within(t, "p99", p99, 0.99*driverMaxWait, 0.01)
	if bound != driverBound || bound >= 1 {
		t.Errorf("bound %.2f s, want %.2f s", bound, driverBound)
	}
}

// Reading as the pods, every volume reads its objects with a quorum GET
// when published and at each renewal of its pod's token: the steady
// volumes every TokenRenewal, each arriving one once and again while it
// stays; the watches are as before.
func TestDriverReadingAsThePods(t *testing.T) {
	shared := Object{Kind: ConfigMap, Namespace: "ns", Name: "shared"}
	secret := Object{Kind: Secret, Namespace: "ns", Name: "tls"}
	node := Node{Name: "n", Behaviour: Driver, ReadsAsPods: true, Pods: []Pod{
		{Name: "a", Volumes: 2, Reads: []Object{shared, secret}},
		{Name: "b", Volumes: 1, Reads: []Object{shared}},
	}, Arrivals: []Arrival{{Object: shared, Rate: 0.5, Lifetime: 96 * time.Minute}}}
	p := Predict([]Node{node})
	renewal := TokenRenewal.Seconds()
	want := 3/renewal + 0.5 + 0.5*96*60/renewal // three steady reads; the arrivals' first reads and two renewals each
	within(t, "apiserver GETs", p.Total.APIServerGetQPS, want, 1e-9)
	within(t, "etcd GETs (quorum)", p.Total.EtcdGetQPS, want, 1e-9)
	if p.Total.Watches != 2 || p.Total.Churn.WatchOpenQPS != 0 {
		t.Errorf("watches %d, opens %.3f/s: want the two objects', none opened by arrivals (a pod that stays holds shared's)", p.Total.Watches, p.Total.Churn.WatchOpenQPS)
	}
	node.ReadsAsPods = false
	if got := Predict([]Node{node}).Total; got.APIServerGetQPS != 0 || got.EtcdGetQPS != 0 {
		t.Errorf("reading as itself: %+v, want no GET", got)
	}
}
