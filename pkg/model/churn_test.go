package model

import (
	"math"
	"testing"
	"time"
)

// The churn's terms at their limits: no arrivals cost nothing; under
// first-reference every arrival is a quorum GET and rare arrivals leave the
// steady refreshes as they are, while frequent ones replace them; a watch
// is opened by every arrival when pods never overlap and by almost none
// when they always do.
func TestEntryChurn(t *testing.T) {
	near := func(what string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-3*math.Max(1, math.Abs(want)) {
			t.Errorf("%s: %.6f, want %.6f", what, got, want)
		}
	}
	if got := EntryChurn(FirstReference, Churn{}, 0.1); got != (ChurnLoad{}) {
		t.Errorf("no arrivals: %+v", got)
	}
	for _, b := range []Behaviour{Get, EverySync} {
		got := EntryChurn(b, Churn{Arrivals: 0.5}, 0)
		near(string(b)+" apiserver", got.APIServerGetQPS, 0.5)
		near(string(b)+" etcd", got.EtcdGetQPS, 0.5)
	}
	steady := 1 / 33.0 // a refresh every 33 s
	rare := EntryChurn(FirstReference, Churn{Arrivals: 1e-6}, steady)
	near("first-reference, rare arrivals: the steady refreshes stay", rare.APIServerGetQPS, 1e-6)
	near("first-reference, rare arrivals: etcd", rare.EtcdGetQPS, 1e-6)
	often := EntryChurn(FirstReference, Churn{Arrivals: 1}, steady)
	near("first-reference, an arrival a second: its GETs replace the refreshes", often.APIServerGetQPS, 1-steady)
	near("first-reference, an arrival a second: etcd", often.EtcdGetQPS, 1)
	// Between: arrivals every 33 s on average leave the refreshes that come
	// before the next one, λ/(e − 1).
	mid := EntryChurn(FirstReference, Churn{Arrivals: steady}, steady)
	near("first-reference, an arrival per cycle", mid.APIServerGetQPS, steady+steady/(math.E-1)-steady)

	near("watch, pods that never overlap", EntryChurn(Watch, Churn{Arrivals: 0.01, Lifetime: time.Millisecond}, 0).WatchOpenQPS, 0.01)
	near("watch, ρ = 1", EntryChurn(Driver, Churn{Arrivals: 0.01, Lifetime: 100 * time.Second}, 0).WatchOpenQPS, 0.01/math.E)
	if got := EntryChurn(Watch, Churn{Arrivals: 1, Lifetime: time.Hour}, 0); got.WatchOpenQPS > 1e-9 || got.APIServerGetQPS != 0 {
		t.Errorf("watch, pods always overlapping: %+v", got)
	}
}
