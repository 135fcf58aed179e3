package analyze

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nodeagent-io/nodeagent/pkg/model"
)

func TestBehaviourByVersionAndStrategy(t *testing.T) {
	for _, tt := range []struct {
		version  string
		strategy Strategy
		want     model.Behaviour
		lifetime time.Duration
	}{
		{"v1.28.15", StrategyCache, model.EverySync, 450 * time.Second},
		{"v1.29.0", StrategyCache, model.FirstReference, 450 * time.Second},
		{"v1.29.3-eks-adc7111", StrategyCache, model.FirstReference, 450 * time.Second},
		{"v1.36.3", StrategyCache, model.FirstReference, 45 * time.Minute},
		{"v1.30.0+k3s1", StrategyWatch, model.Watch, 450 * time.Second},
		{"v1.31.0", StrategyWatch, model.Watch, 45 * time.Minute},
		{"v1.26.1", StrategyGet, model.Get, 450 * time.Second},
		{"not-a-version", StrategyCache, model.FirstReference, 45 * time.Minute},
	} {
		s := nodeSettings(NodeInfo{Name: "n", KubeletVersion: tt.version, TTL: "15", HasTTL: true}, Assumptions{Strategy: tt.strategy, SyncFrequency: time.Minute})
		if got := s.Behaviour(); got != tt.want {
			t.Errorf("%s %s: behaviour %s, want %s", tt.version, tt.strategy, got, tt.want)
		}
		if got := s.WatchLifetime(); got != tt.lifetime {
			t.Errorf("%s: watch lifetime %s, want %s", tt.version, got, tt.lifetime)
		}
		if flagged := len(s.Notes) > 0; flagged != (tt.version == "not-a-version") {
			t.Errorf("%s: notes %q", tt.version, s.Notes)
		}
		if s.TTL != 15*time.Second || s.Source != Assumed {
			t.Errorf("%s: TTL %s from %s, want 15s assumed", tt.version, s.TTL, s.Source)
		}
	}
}

func TestTTLAnnotation(t *testing.T) {
	for _, tt := range []struct {
		ttl     string
		has     bool
		want    time.Duration
		flagged bool
	}{
		{"0", true, 0, false},
		{"300", true, 300 * time.Second, false},
		{"", false, time.Minute, true},
		{"soon", true, time.Minute, true},
	} {
		s := nodeSettings(NodeInfo{KubeletVersion: "v1.36.0", TTL: tt.ttl, HasTTL: tt.has}, Assumptions{Strategy: StrategyCache})
		if s.TTL != tt.want || (len(s.Notes) > 0) != tt.flagged {
			t.Errorf("annotation %q (present %v): TTL %s, notes %q; want %s, flagged %v", tt.ttl, tt.has, s.TTL, s.Notes, tt.want, tt.flagged)
		}
	}
}

// /configz is read whatever its release's envelope and casing.
func TestParseConfigz(t *testing.T) {
	for _, tt := range []struct {
		name, body string
		want       kubeletConfig
	}{
		{"v1.27", `{"kubeletconfig":{"syncFrequency":"1m0s","configMapAndSecretChangeDetectionStrategy":"Cache"}}`, kubeletConfig{StrategyCache, time.Minute}},
		{"v1.28 capitalised", `{"kubeletconfig":{"SyncFrequency":"30s","ConfigMapAndSecretChangeDetectionStrategy":"Get"}}`, kubeletConfig{StrategyGet, 30 * time.Second}},
		{"with kind", `{"kind":"KubeletConfiguration","apiVersion":"kubelet.config.k8s.io/v1beta1","kubeletconfig":{"syncFrequency":"2m0s"}}`, kubeletConfig{StrategyWatch, 2 * time.Minute}},
		{"no envelope", `{"syncFrequency":"10s","configMapAndSecretChangeDetectionStrategy":"Watch"}`, kubeletConfig{StrategyWatch, 10 * time.Second}},
		{"nanoseconds", `{"kubeletconfig":{"SyncFrequency":{"Duration":5000000000}}}`, kubeletConfig{StrategyWatch, 5 * time.Second}},
	} {
		got, err := parseConfigz([]byte(tt.body))
		if err != nil || got != tt.want {
			t.Errorf("%s: got %+v, %v; want %+v", tt.name, got, err, tt.want)
		}
	}
	for _, bad := range []string{`not json`, `{}`, `{"other":{"syncFrequency":"10s"}}`, `{"kubeletconfig":{"configMapAndSecretChangeDetectionStrategy":"Sometimes"}}`, `{"kubeletconfig":{"syncFrequency":"often"}}`} {
		if _, err := parseConfigz([]byte(bad)); err == nil {
			t.Errorf("%s: parsed, want an error", bad)
		}
	}
}

// fakeConfigz serves canned /configz bodies.
type fakeConfigz struct {
	allow  bool
	bodies map[string]string
}

func (f fakeConfigz) allowed(context.Context) (bool, string, error) {
	return f.allow, "no RBAC rule", nil
}
func (f fakeConfigz) read(_ context.Context, node string) ([]byte, error) {
	body, ok := f.bodies[node]
	if !ok {
		return nil, errors.New("the server could not find the requested resource")
	}
	return []byte(body), nil
}

// A node whose /configz fails falls back to the assumptions, with a note;
// without the permission nothing is read and the result says so once.
func TestReadSettings(t *testing.T) {
	nodes := []NodeInfo{{Name: "a", KubeletVersion: "v1.36.0"}, {Name: "b", KubeletVersion: "v1.28.0"}}
	assume := Assumptions{Strategy: StrategyWatch, SyncFrequency: time.Minute}
	reader := fakeConfigz{allow: true, bodies: map[string]string{"a": `{"kubeletconfig":{"syncFrequency":"10s","configMapAndSecretChangeDetectionStrategy":"Cache"}}`}}
	settings, warnings, err := ReadSettings(context.Background(), reader, nodes, assume, 4, nil)
	if err != nil || len(warnings) != 0 {
		t.Fatalf("ReadSettings: %v, warnings %q", err, warnings)
	}
	if a := settings["a"]; a.Source != FromConfigz || a.Strategy != StrategyCache || a.SyncFrequency != 10*time.Second {
		t.Errorf("node a: %+v, want Cache at 10s from configz", a)
	}
	if b := settings["b"]; b.Source != Assumed || b.Strategy != StrategyWatch || len(b.Notes) < 2 || !strings.Contains(strings.Join(b.Notes, ";"), "/configz failed") {
		t.Errorf("node b: %+v, want assumed Watch with a note of the failure", b)
	}
	reader.allow = false
	settings, warnings, _ = ReadSettings(context.Background(), reader, nodes, assume, 4, nil)
	if settings["a"].Source != Assumed || len(warnings) != 1 || !strings.Contains(warnings[0], "nodes/proxy") {
		t.Errorf("without permission: %+v, warnings %q; want assumed, one warning naming nodes/proxy", settings["a"], warnings)
	}
}
