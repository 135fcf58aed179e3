package model

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/version"
)

// Strategy is the kubelet's configMapAndSecretChangeDetectionStrategy,
// spelled as its configuration spells it.
type Strategy string

const (
	StrategyGet   Strategy = "Get"
	StrategyCache Strategy = "Cache"
	StrategyWatch Strategy = "Watch"
)

// Strategies lists the kubelet's strategies; Watch is its default.
var Strategies = []Strategy{StrategyWatch, StrategyCache, StrategyGet}

// ParseStrategy accepts the kubelet's spelling of a strategy.
func ParseStrategy(s string) (Strategy, error) {
	for _, known := range Strategies {
		if Strategy(s) == known {
			return known, nil
		}
	}
	return "", fmt.Errorf("unknown change-detection strategy %q: want Get, Cache or Watch", s)
}

// KubeletRule is one row of the table of kubelet behaviours: from release
// Since on (every release where Since is nil), a kubelet with Strategy
// behaves as Behaviour, until a later row of the same strategy takes over.
type KubeletRule struct {
	Strategy  Strategy
	Since     *version.Version
	Behaviour Behaviour
}

// KubeletRules is the table of kubelet behaviours, in release order within
// each strategy (docs/kubelet-behaviour.md). A new kubelet release that
// changes a strategy's requests is one more row.
var KubeletRules = []KubeletRule{
	{Strategy: StrategyGet, Behaviour: Get},
	{Strategy: StrategyCache, Behaviour: EverySync},
	// kubernetes#120255: only a pod's first reference invalidates.
	{Strategy: StrategyCache, Since: version.MajorMinor(1, 29), Behaviour: FirstReference},
	{Strategy: StrategyWatch, Behaviour: Watch},
}

// KubeletBehaviour is how a kubelet of release v with strategy s behaves:
// the last rule for s that v has reached. A nil v (a version that could
// not be read) is taken to be the newest release.
func KubeletBehaviour(v *version.Version, s Strategy) Behaviour {
	var behaviour Behaviour
	for _, r := range KubeletRules {
		if r.Strategy != s {
			continue
		}
		if r.Since == nil || v == nil || v.AtLeast(r.Since) {
			behaviour = r.Behaviour
		}
	}
	return behaviour
}

// FirstRelease is the release from which a kubelet with strategy s behaves
// as b; nil if it always has, or never does (ok false).
func FirstRelease(s Strategy, b Behaviour) (since *version.Version, ok bool) {
	for _, r := range KubeletRules {
		if r.Strategy == s && r.Behaviour == b {
			return r.Since, true
		}
	}
	return nil, false
}

// watchLifetimeRule: from release Since on, the kubelet's object watches
// last Mean on average before the apiserver ends them and it opens them
// again (a timeout drawn from [m, 2m)).
type watchLifetimeRule struct {
	Since *version.Version
	Mean  time.Duration
}

var watchLifetimeRules = []watchLifetimeRule{
	{Mean: 450 * time.Second}, // m = 5 minutes
	// kubernetes#124245: m = 30 minutes.
	{Since: version.MajorMinor(1, 31), Mean: 45 * time.Minute},
}

// KubeletWatchLifetime is the mean time a kubelet of release v keeps one
// object's watch open; a nil v is taken to be the newest release.
func KubeletWatchLifetime(v *version.Version) time.Duration {
	var mean time.Duration
	for _, r := range watchLifetimeRules {
		if r.Since == nil || v == nil || v.AtLeast(r.Since) {
			mean = r.Mean
		}
	}
	return mean
}
