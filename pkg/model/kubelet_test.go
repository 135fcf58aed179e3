package model

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/version"
)

// Each row of the table of kubelet behaviours, by release and strategy.
// A new row of KubeletRules is a new case here.
func TestKubeletBehaviour(t *testing.T) {
	for _, tt := range []struct {
		release  string // "" for a version that could not be read
		strategy Strategy
		want     Behaviour
	}{
		{"1.26.1", StrategyGet, Get},
		{"1.36.3", StrategyGet, Get},
		{"1.20.0", StrategyCache, EverySync},
		{"1.28.15", StrategyCache, EverySync},
		// kubernetes#120255: a pod's sync no longer drops its objects.
		{"1.29.0", StrategyCache, FirstReference},
		{"1.29.3-eks-adc7111", StrategyCache, FirstReference},
		{"1.36.3", StrategyCache, FirstReference},
		// v1.37's ConfigMap manager is v1.36's (context plumbing only).
		{"1.37.2", StrategyCache, FirstReference},
		{"1.37.2", StrategyGet, Get},
		{"1.37.2", StrategyWatch, Watch},
		{"", StrategyCache, FirstReference},
		{"1.28.15", StrategyWatch, Watch},
		{"1.36.3", StrategyWatch, Watch},
	} {
		var v *version.Version
		if tt.release != "" {
			v = version.MustParseGeneric(tt.release)
		}
		if got := KubeletBehaviour(v, tt.strategy); got != tt.want {
			t.Errorf("kubelet %q, %s: got %s, want %s", tt.release, tt.strategy, got, tt.want)
		}
	}
}

func TestFirstRelease(t *testing.T) {
	since, ok := FirstRelease(StrategyCache, FirstReference)
	if !ok || since.String() != "1.29" {
		t.Errorf("FirstRelease(Cache, FirstReference) = %v, %v; want 1.29", since, ok)
	}
	if since, ok := FirstRelease(StrategyWatch, Watch); !ok || since != nil {
		t.Errorf("FirstRelease(Watch, Watch) = %v, %v; want every release", since, ok)
	}
	if _, ok := FirstRelease(StrategyWatch, Get); ok {
		t.Error("FirstRelease(Watch, Get): the Watch strategy never behaves as Get")
	}
}

func TestParseStrategy(t *testing.T) {
	for _, s := range []string{"Get", "Cache", "Watch"} {
		if got, err := ParseStrategy(s); err != nil || string(got) != s {
			t.Errorf("ParseStrategy(%q) = %q, %v", s, got, err)
		}
	}
	if _, err := ParseStrategy("cache"); err == nil {
		t.Error(`ParseStrategy("cache"): the kubelet spells it Cache`)
	}
}

func TestKubeletWatchLifetime(t *testing.T) {
	for release, want := range map[string]time.Duration{"1.30.0": 450 * time.Second, "1.31.0": 45 * time.Minute, "1.36.3": 45 * time.Minute} {
		if got := KubeletWatchLifetime(version.MustParseGeneric(release)); got != want {
			t.Errorf("v%s: got %s, want %s", release, got, want)
		}
	}
	if got := KubeletWatchLifetime(nil); got != 45*time.Minute {
		t.Errorf("unknown release: got %s, want the newest's 45m", got)
	}
}
