package compare

import (
	"math"
	"strings"
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
		mean, meanSquare := syncIntervalMoments(tt.s)
		// T ≫ S: one refresh per T plus the mean residual life.
		within(t, "S="+tt.s.String()+" T="+tt.ttl.String(), refreshRate(tt.s, tt.ttl, 1), 1/(tt.ttl.Seconds()+meanSquare/(2*mean)), 0.02)
	}
	// T below one sync interval: every remount refreshes.
	mean, _ := syncIntervalMoments(time.Minute)
	within(t, "S=60s T=15s", refreshRate(time.Minute, 15*time.Second, 1), 1/mean, 0.01)
	within(t, "T=0", refreshRate(5*time.Second, 0, 1), 1/6.75, 0.01)
	// T = 0 with k pods: every pod's remount refreshes.
	within(t, "T=0, 3 pods", refreshRate(5*time.Second, 0, 3), 3/6.75, 0.01)
	// An entry shared by more pods is refreshed sooner after it expires,
	// never more than once per T; ten pods sharing one entry cost far
	// less than ten entries.
	one, shared := refreshRate(5*time.Second, 25*time.Second, 1), refreshRate(5*time.Second, 25*time.Second, 10)
	if shared <= one || shared > 1/25.0 || shared > 2*one {
		t.Errorf("10 pods sharing: %.4f refreshes/s; want above one pod's %.4f, at most 1/T and far below 10 entries' %.4f", shared, one, 10*one)
	}
	// Deterministic.
	if refreshRate(5*time.Second, 25*time.Second, 1) != one {
		t.Error("refreshRate is not deterministic")
	}
}

// Pods of a node that share a ConfigMap and come due in the same tick share
// one quorum GET in every-sync mode: ten pods at S = 5 s send about 0.80
// GET/s (1 - (1 - 1/6.75)^10 if the ticks were independent), not 10/6.75.
func TestSyncTickRate(t *testing.T) {
	within(t, "one pod", syncTickRate(5*time.Second, 1), 1/6.75, 0.001)
	within(t, "ten pods, S=5s", syncTickRate(5*time.Second, 10), 0.80, 0.03)
	within(t, "two pods, S=60s", syncTickRate(time.Minute, 2), 1-(1-1/75.5)*(1-1/75.5), 0.02)
	// At S = 2 s every interval is exactly 3 ticks: five pods cover each
	// of the 3 phases with probability 1 - (2/3)^5.
	within(t, "five pods, S=2s", syncTickRate(2*time.Second, 5), 1-math.Pow(2.0/3, 5), 0.02)
	if r := syncTickRate(time.Second, 50); r > 1 || r < 0.99 {
		t.Errorf("50 pods at S=1s: %.3f GET/s, want just under one per tick", r)
	}
	if syncTickRate(5*time.Second, 10) != syncTickRate(5*time.Second, 10) {
		t.Error("syncTickRate is not deterministic")
	}
}

func TestExpectedQPS(t *testing.T) {
	s := DefaultScenario() // 20 nodes × 10 pods with their own ConfigMap, S=5s, T=25s
	s.ServiceAccountVolume = false
	api, etcd := expectedQPS(layout(s, DefaultNamespace), s.SyncFrequency, ModeEverySync, s.TTL)
	within(t, "every-sync apiserver", api, 200/6.75, 0.001)
	within(t, "every-sync etcd", etcd, 200/6.75, 0.001)
	api, etcd = expectedQPS(layout(s, DefaultNamespace), s.SyncFrequency, ModeFirstReference, s.TTL)
	within(t, "first-reference apiserver", api, 200*refreshRate(s.SyncFrequency, s.TTL, 1), 0.001)
	if etcd != 0 {
		t.Errorf("first-reference etcd: %v, want 0", etcd)
	}
	if api, etcd = expectedQPS(layout(s, DefaultNamespace), s.SyncFrequency, ModeWatch, s.TTL); api != 0 || etcd != 0 {
		t.Errorf("watch: %v, %v", api, etcd)
	}

	// The service-account volume adds one kube-root-ca.crt per node,
	// shared by the node's ten pods.
	s.ServiceAccountVolume = true
	nodes := layout(s, DefaultNamespace)
	if v := nodes[0].volumes(); v != 20 {
		t.Errorf("volumes per node with the service-account volume: %d, want 20", v)
	}
	api, etcd = expectedQPS(nodes, s.SyncFrequency, ModeEverySync, s.TTL)
	within(t, "every-sync with the root CA", api, 200/6.75+20*syncTickRate(s.SyncFrequency, 10), 0.001)
	within(t, "every-sync etcd with the root CA", etcd, api, 0)
	api, _ = expectedQPS(nodes, s.SyncFrequency, ModeFirstReference, s.TTL)
	within(t, "first-reference with the root CA", api, 200*refreshRate(s.SyncFrequency, s.TTL, 1)+20*refreshRate(s.SyncFrequency, s.TTL, 10), 0.001)
	api, _ = expectedQPS(nodes, s.SyncFrequency, ModeGet, s.TTL)
	within(t, "get with the root CA", api, 400/6.75, 0.001)

	// At T = 0 nothing is fresh: etcd still sees one quorum GET per tick
	// for the shared root CA, and the apiserver every remount, the others
	// at resourceVersion "0".
	api, etcd = expectedQPS(nodes, s.SyncFrequency, ModeEverySync, 0)
	within(t, "every-sync apiserver at T = 0", api, 400/6.75, 0.001)
	within(t, "every-sync etcd at T = 0", etcd, 200/6.75+20*syncTickRate(s.SyncFrequency, 10), 0.001)
}

func TestValidateSaysWhatToChange(t *testing.T) {
	tests := []struct {
		name   string
		change func(*Scenario)
		want   string
	}{
		{"no nodes", func(s *Scenario) { s.Nodes = 0 }, "--nodes"},
		{"negative phase", func(s *Scenario) { s.PhaseDuration = -time.Second }, "--phase-duration"},
		{"fractional ttl", func(s *Scenario) { s.TTL = 1500 * time.Millisecond }, "--ttl"},
		{"agent throttled", func(s *Scenario) { s.PodsPerNode = 300 }, "lower --pods-per-node"},
		{"too many pods", func(s *Scenario) {
			s.Nodes, s.PodsPerNode, s.SyncFrequency, s.PhaseDuration = 1001, 30, time.Hour, 3*time.Hour
		}, "more than this machine"},
		{"apiserver saturated", func(s *Scenario) { s.Nodes, s.PodsPerNode = 400, 30 }, "in total"},
		{"pool too small", func(s *Scenario) { s.ConfigMapsPerPod, s.SharedConfigMaps = 3, 2 }, "--shared-configmaps"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := DefaultScenario()
			tt.change(&s)
			if err := s.Validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want an error mentioning %q", err, tt.want)
			}
		})
	}
	if err := DefaultScenario().Validate(); err != nil {
		t.Errorf("the default scenario is invalid: %v", err)
	}
}

func TestParseModes(t *testing.T) {
	if m, err := ParseModes("every-sync, watch"); err != nil || len(m) != 2 {
		t.Errorf("got %v, %v", m, err)
	}
	for _, bad := range []string{"", "poll", "watch,watch"} {
		if _, err := ParseModes(bad); err == nil {
			t.Errorf("ParseModes(%q) succeeded", bad)
		}
	}
}
