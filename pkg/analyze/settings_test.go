package analyze

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeagent-io/nodeagent/pkg/model"
	"github.com/nodeagent-io/nodeagent/pkg/podrefs/inventory"
	"github.com/nodeagent-io/nodeagent/pkg/ttl"
)

func TestBehaviourByVersionAndStrategy(t *testing.T) {
	for _, tt := range []struct {
		version  string
		strategy model.Strategy
		want     model.Behaviour
		lifetime time.Duration
	}{
		{"v1.28.15", model.StrategyCache, model.EverySync, 450 * time.Second},
		{"v1.29.0", model.StrategyCache, model.FirstReference, 450 * time.Second},
		{"v1.29.3-eks-adc7111", model.StrategyCache, model.FirstReference, 450 * time.Second},
		{"v1.36.3", model.StrategyCache, model.FirstReference, 45 * time.Minute},
		{"v1.30.0+k3s1", model.StrategyWatch, model.Watch, 450 * time.Second},
		{"v1.31.0", model.StrategyWatch, model.Watch, 45 * time.Minute},
		{"v1.26.1", model.StrategyGet, model.Get, 450 * time.Second},
		{"not-a-version", model.StrategyCache, model.FirstReference, 45 * time.Minute},
	} {
		s := AssumedSettings(inventory.NodeInfo{Name: "n", KubeletVersion: tt.version, TTL: 15 * time.Second}, Assumptions{Strategy: tt.strategy, SyncFrequency: time.Minute})
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

// The TTL is read as the agent reads it (pkg/ttl): a negative value as it
// is, where the kubelet finds nothing ever fresh.
func TestTTLAnnotation(t *testing.T) {
	for _, tt := range []struct {
		annotations map[string]string
		want        time.Duration
		flagged     bool
	}{
		{map[string]string{ttl.Annotation: "0"}, 0, false},
		{map[string]string{ttl.Annotation: "300"}, 300 * time.Second, false},
		{map[string]string{ttl.Annotation: "-15"}, -15 * time.Second, false},
		{nil, time.Minute, true},
		{map[string]string{ttl.Annotation: "soon"}, time.Minute, true},
	} {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Annotations: tt.annotations}}
		node.Status.NodeInfo.KubeletVersion = "v1.36.0"
		s := AssumedSettings(inventory.NodeInfoOf(node), Assumptions{Strategy: model.StrategyCache})
		if s.TTL != tt.want || (len(s.Notes) > 0) != tt.flagged {
			t.Errorf("annotations %v: TTL %s, notes %q; want %s, flagged %v", tt.annotations, s.TTL, s.Notes, tt.want, tt.flagged)
		}
	}
}

// /configz is read whatever its release's envelope and casing.
func TestParseConfigz(t *testing.T) {
	for _, tt := range []struct {
		name, body string
		want       kubeletConfig
	}{
		{"v1.27", `{"kubeletconfig":{"syncFrequency":"1m0s","configMapAndSecretChangeDetectionStrategy":"Cache"}}`, kubeletConfig{Strategy: model.StrategyCache, SyncFrequency: time.Minute}},
		{"v1.28 capitalised", `{"kubeletconfig":{"SyncFrequency":"30s","ConfigMapAndSecretChangeDetectionStrategy":"Get"}}`, kubeletConfig{Strategy: model.StrategyGet, SyncFrequency: 30 * time.Second}},
		{"with kind", `{"kind":"KubeletConfiguration","apiVersion":"kubelet.config.k8s.io/v1beta1","kubeletconfig":{"syncFrequency":"2m0s"}}`, kubeletConfig{Strategy: model.StrategyWatch, SyncFrequency: 2 * time.Minute}},
		{"no envelope", `{"syncFrequency":"10s","configMapAndSecretChangeDetectionStrategy":"Watch"}`, kubeletConfig{Strategy: model.StrategyWatch, SyncFrequency: 10 * time.Second}},
		{"nanoseconds", `{"kubeletconfig":{"SyncFrequency":{"Duration":5000000000}}}`, kubeletConfig{Strategy: model.StrategyWatch, SyncFrequency: 5 * time.Second}},
		{"feature gates", `{"kubeletconfig":{"featureGates":{"AtomicWriteVolumeUserFields":true}}}`,
			kubeletConfig{Strategy: model.StrategyWatch, SyncFrequency: time.Minute, FeatureGates: map[string]bool{"AtomicWriteVolumeUserFields": true}}},
	} {
		got, err := parseConfigz([]byte(tt.body))
		if err != nil || !reflect.DeepEqual(got, tt.want) {
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
	nodes := []inventory.NodeInfo{{Name: "a", KubeletVersion: "v1.36.0"}, {Name: "b", KubeletVersion: "v1.28.0"}}
	assume := Assumptions{Strategy: model.StrategyWatch, SyncFrequency: time.Minute}
	reader := fakeConfigz{allow: true, bodies: map[string]string{"a": `{"kubeletconfig":{"syncFrequency":"10s","configMapAndSecretChangeDetectionStrategy":"Cache"}}`}}
	settings, warnings, err := ReadSettings(context.Background(), reader, nodes, assume, 4, nil)
	if err != nil || len(warnings) != 0 {
		t.Fatalf("ReadSettings: %v, warnings %q", err, warnings)
	}
	if a := settings["a"]; a.Source != FromConfigz || a.Strategy != model.StrategyCache || a.SyncFrequency != 10*time.Second {
		t.Errorf("node a: %+v, want Cache at 10s from configz", a)
	}
	if b := settings["b"]; b.Source != Assumed || b.Strategy != model.StrategyWatch || len(b.Notes) < 1 || !strings.Contains(strings.Join(b.Notes, ";"), "/configz failed") {
		t.Errorf("node b: %+v, want assumed Watch with a note of the failure", b)
	}
	reader.allow = false
	settings, warnings, _ = ReadSettings(context.Background(), reader, nodes, assume, 4, nil)
	if settings["a"].Source != Assumed || len(warnings) != 1 || !strings.Contains(warnings[0], "nodes/proxy") {
		t.Errorf("without permission: %+v, warnings %q; want assumed, one warning naming nodes/proxy", settings["a"], warnings)
	}
}
