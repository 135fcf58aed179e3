package configmapcache

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testingclock "k8s.io/utils/clock/testing"
)

// The cache strategy's lookup, for `make bench`: a fresh entry (no GET),
// and a stale one, whose lookup sends a GET (here a function that returns
// at once, so the figure is the store's own cost).

func benchStore(ttl time.Duration) (*ttlStore, *testingclock.FakeClock) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm", ResourceVersion: "1"}, Data: map[string]string{"k": "v"}}
	get := func(context.Context, string, string, metav1.GetOptions) (*corev1.ConfigMap, error) { return cm, nil }
	clk := testingclock.NewFakeClock(time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC))
	s := newTTLStore(get, clk, func() time.Duration { return ttl }, nopRecorder{})
	s.AddReference("ns", "cm")
	return s, clk
}

func BenchmarkCacheLookupFresh(b *testing.B) {
	s, _ := benchStore(time.Hour)
	if _, err := s.Get(context.Background(), "ns", "cm"); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := s.Get(context.Background(), "ns", "cm"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCacheLookupStale(b *testing.B) {
	s, clk := benchStore(time.Second)
	for b.Loop() {
		clk.Step(2 * time.Second) // older than the TTL: every lookup refreshes
		if _, err := s.Get(context.Background(), "ns", "cm"); err != nil {
			b.Fatal(err)
		}
	}
}
