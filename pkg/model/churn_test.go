package model

import (
	"math"
	"testing"
	"time"
)

// The churn's terms at their limits: no arrivals cost nothing; an
// arrival's first mount is a quorum GET, shared with an arrival before its
// fetch; get and every-sync add the resync's, every-sync only on a tick no
// other reader is due on; under first-reference rare arrivals leave the
// steady refreshes as they are while frequent ones replace them; a watch is
// opened by every arrival when pods never overlap and by almost none when
// they always do.
func TestEntryChurn(t *testing.T) {
	near := func(what string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-3*math.Max(1, math.Abs(want)) {
			t.Errorf("%s: %.6f, want %.6f", what, got, want)
		}
	}
	d := ArrivalMountDelay.Seconds()
	fetches := func(lambda float64) float64 { return lambda / (1 + lambda*d) }
	if got := EntryChurn(FirstReference, Churn{}, 0.1); got != (ChurnLoad{}) {
		t.Errorf("no arrivals: %+v", got)
	}
	long := 10 * time.Second // past the resync
	near("get: the mount's and the resync's", EntryChurn(Get, Churn{Arrivals: 0.5, Lifetime: long, Resyncs: 1}, 0).EtcdGetQPS, 1)
	near("get: a slow start's two resyncs", EntryChurn(Get, Churn{Arrivals: 0.5, Lifetime: long, Resyncs: 2}, 0).EtcdGetQPS, 1.5)
	near("get: gone before the resync", EntryChurn(Get, Churn{Arrivals: 0.5, Lifetime: time.Millisecond, Resyncs: 0.001}, 0).EtcdGetQPS, 0.5005)
	alone := EntryChurn(EverySync, Churn{Arrivals: 0.5, Lifetime: long, Resyncs: 1}, 0)
	near("every-sync, no other reader: the fetches and the resyncs' ticks", alone.EtcdGetQPS, fetches(0.5)-math.Expm1(-0.5))
	busy := EntryChurn(EverySync, Churn{Arrivals: 0.5, Lifetime: long, Resyncs: 1, SteadyTicks: 1}, 0)
	near("every-sync, a reader due on every tick: the fetches alone", busy.APIServerGetQPS, fetches(0.5))

	steady := 1 / 33.0 // a refresh every 33 s
	rare := EntryChurn(FirstReference, Churn{Arrivals: 1e-6}, steady)
	near("first-reference, rare arrivals: the steady refreshes stay", rare.APIServerGetQPS, 1e-6)
	near("first-reference, rare arrivals: etcd", rare.EtcdGetQPS, 1e-6)
	often := EntryChurn(FirstReference, Churn{Arrivals: 1}, steady)
	near("first-reference, an arrival a second: its fetches replace the refreshes", often.APIServerGetQPS, fetches(1)-steady)
	near("first-reference, an arrival a second: etcd", often.EtcdGetQPS, fetches(1))
	// Between: fetches every 33 s on average leave the refreshes that come
	// before the next one, λ/(e − 1).
	mid := EntryChurn(FirstReference, Churn{Arrivals: steady}, steady)
	f := fetches(steady)
	near("first-reference, an arrival per cycle", mid.APIServerGetQPS, f+f/math.Expm1(f/steady)-steady)
	// The resync a second after the first sync refreshes where T is
	// shorter (T = 0: every read refreshes), at resourceVersion 0.
	zero := EntryChurn(FirstReference, Churn{Arrivals: 0.5, Lifetime: long, Resyncs: 1}, 0)
	near("first-reference, T = 0: the fetches and the resyncs' refreshes", zero.APIServerGetQPS, fetches(0.5)+0.5)
	near("first-reference, T = 0: etcd has the fetches alone", zero.EtcdGetQPS, fetches(0.5))
	slow := EntryChurn(FirstReference, Churn{Arrivals: 0.5, Lifetime: long, Resyncs: 1.6}, 0)
	near("first-reference, T = 0, slow starts: a refresh for each resync", slow.APIServerGetQPS, fetches(0.5)+0.8)
	half := EntryChurn(FirstReference, Churn{Arrivals: 0.5, Lifetime: long, Resyncs: 1, TTL: 500 * time.Millisecond}, 0)
	near("first-reference, T = 0.5 s: a resync shares a fetch in the T before it", half.APIServerGetQPS, fetches(0.5)+0.5*math.Exp(-fetches(0.5)*0.5))
	fresh := EntryChurn(FirstReference, Churn{Arrivals: 0.5, Lifetime: long, Resyncs: 1, TTL: 10 * time.Second}, 0)
	near("first-reference, T = 10 s: the resync finds it fresh", fresh.APIServerGetQPS, fetches(0.5))

	near("watch, pods that never overlap", EntryChurn(Watch, Churn{Arrivals: 0.01, Lifetime: time.Millisecond}, 0).WatchOpenQPS,
		0.01*math.Exp(-0.01*(0.001+ReleaseDelay.Seconds())))
	near("watch, ρ = 1", EntryChurn(Driver, Churn{Arrivals: 0.01, Lifetime: 100*time.Second - ReleaseDelay}, 0).WatchOpenQPS, 0.01/math.E)
	if got := EntryChurn(Watch, Churn{Arrivals: 1, Lifetime: time.Hour}, 0); got.WatchOpenQPS > 1e-9 || got.APIServerGetQPS != 0 {
		t.Errorf("watch, pods always overlapping: %+v", got)
	}
}

// PLEGResyncs counts a relist during the first sync's start of the
// containers and one while they run, each as likely as its span is of
// the relist period: a pod started at once that runs past a relist gets
// the one resync, a slow start adds the second, containers that finish
// at once add none, and neither term passes one.
func TestPLEGResyncs(t *testing.T) {
	for _, c := range []struct {
		startup, running time.Duration
		want             float64
	}{
		{0, time.Hour, 1},
		{0, 0, 0},
		{5 * time.Second, time.Hour, 2},
		{5 * time.Second, 300 * time.Millisecond, 1.3},
		{500 * time.Millisecond, 250 * time.Millisecond, 0.75},
		{-time.Second, time.Second, 1}, // clocks a second apart: no less than none
	} {
		if got := PLEGResyncs(c.startup, c.running); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("PLEGResyncs(%s, %s) = %.3f, want %.3f", c.startup, c.running, got, c.want)
		}
	}
}

// Predict adds each entry's churn to its steady load: an entry that pods
// which stay also read keeps its watch open through the arrivals, one only
// arrivals read opens a watch per arrival that finds it closed, and the
// GETs' totals hold the churn's.
func TestPredictWithArrivals(t *testing.T) {
	shared := Object{Kind: ConfigMap, Namespace: "ns", Name: "shared"}
	jobs := Object{Kind: ConfigMap, Namespace: "ns", Name: "jobs"}
	node := func(b Behaviour) Node {
		return Node{Name: "n", SyncFrequency: 10 * time.Second, TTL: 30 * time.Second, Behaviour: b,
			Pods: []Pod{{Name: "p", Volumes: 1, Reads: []Object{shared}}},
			Arrivals: []Arrival{{Object: shared, Rate: 0.2, Lifetime: 5 * time.Second, Resyncs: 1.5},
				{Object: jobs, Rate: 0.1, Lifetime: 5 * time.Second, Resyncs: 1.5}}}
	}
	lambda := func(b Behaviour, rate float64, steadyTicks, steadyRefresh float64) ChurnLoad {
		return EntryChurn(b, Churn{Arrivals: rate, Lifetime: 5 * time.Second, SteadyTicks: steadyTicks, TTL: 30 * time.Second, Resyncs: 1.5}, steadyRefresh)
	}
	watch := Predict([]Node{node(Watch)})
	if want := lambda(Watch, 0.1, 0, 0).WatchOpenQPS; math.Abs(watch.Total.Churn.WatchOpenQPS-want) > 1e-9 || want == 0 {
		t.Errorf("watch: %.4f opens/s, want %.4f (the jobs entry's alone)", watch.Total.Churn.WatchOpenQPS, want)
	}
	if watch.Total.Watches != 1 || watch.Total.APIServerGetQPS != 0 {
		t.Errorf("watch: %+v, want the shared entry's one watch and no GET", watch.Total)
	}
	every := Predict([]Node{node(EverySync)})
	steady := Predict([]Node{{Name: "n", SyncFrequency: 10 * time.Second, TTL: 30 * time.Second, Behaviour: EverySync,
		Pods: []Pod{{Name: "p", Volumes: 1, Reads: []Object{shared}}}}})
	churn := lambda(EverySync, 0.2, SyncTickRate(10*time.Second, 1), 0).EtcdGetQPS + lambda(EverySync, 0.1, 0, 0).EtcdGetQPS
	if got, want := every.Total.APIServerGetQPS, steady.Total.APIServerGetQPS+churn; math.Abs(got-want) > 1e-9 {
		t.Errorf("every-sync: %.4f GET/s, want the steady %.4f and the churn's %.4f", got, steady.Total.APIServerGetQPS, churn)
	}
	if math.Abs(every.Total.Churn.EtcdGetQPS-churn) > 1e-9 {
		t.Errorf("every-sync: churn %+v, want %.4f quorum GET/s", every.Total.Churn, churn)
	}
	first := Predict([]Node{node(FirstReference)})
	refresh := RefreshRate(10*time.Second, 30*time.Second, 1)
	want := lambda(FirstReference, 0.2, 0, refresh).APIServerGetQPS + lambda(FirstReference, 0.1, 0, 0).APIServerGetQPS
	if got := first.Total.Churn.APIServerGetQPS; math.Abs(got-want) > 1e-9 {
		t.Errorf("first-reference: churn %.4f GET/s, want %.4f", got, want)
	}
}
