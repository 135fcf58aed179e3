package analyze

import (
	"fmt"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/util/version"

	"github.com/nodeagent-io/nodeagent/pkg/model"
)

// Strategy is the kubelet's configMapAndSecretChangeDetectionStrategy.
type Strategy string

const (
	StrategyGet   Strategy = "Get"
	StrategyCache Strategy = "Cache"
	StrategyWatch Strategy = "Watch"
)

// ParseStrategy accepts the kubelet's spelling of a strategy.
func ParseStrategy(s string) (Strategy, error) {
	switch st := Strategy(s); st {
	case StrategyGet, StrategyCache, StrategyWatch:
		return st, nil
	}
	return "", fmt.Errorf("unknown change-detection strategy %q: want Get, Cache or Watch", s)
}

// Source says where a node's strategy and sync frequency came from.
type Source string

const (
	// FromConfigz: read from the kubelet's /configz.
	FromConfigz Source = "configz"
	// Assumed: the caller's assumption (--assume-strategy,
	// --assume-sync-frequency), because /configz could not be read.
	Assumed Source = "assumed"
)

// TTLAnnotation is the annotation the TTL controller writes on every Node.
const TTLAnnotation = "node.alpha.kubernetes.io/ttl"

// defaultTTL is the kubelet's TTL where the annotation is missing or
// unparsable.
const defaultTTL = time.Minute

// Versions where the kubelet's behaviour changed.
var (
	// firstReferenceSince: kubernetes#120255, a pod's sync no longer drops
	// its cached objects.
	firstReferenceSince = version.MajorMinor(1, 29)
	// longWatchesSince: kubernetes#124245, the kubelet's object watches
	// last 30 to 60 minutes instead of 5 to 10.
	longWatchesSince = version.MajorMinor(1, 31)
)

// Settings is what decides one node's kubelet's requests.
type Settings struct {
	KubeletVersion string
	// Version is KubeletVersion parsed; nil where it could not be, and the
	// node is then taken to behave as the newest kubelets do.
	Version       *version.Version
	Strategy      Strategy
	SyncFrequency time.Duration
	TTL           time.Duration
	Source        Source
	// Notes say what was assumed or went wrong for this node.
	Notes []string
}

// Behaviour is the load model's behaviour for these settings.
func (s Settings) Behaviour() model.Behaviour {
	switch s.Strategy {
	case StrategyGet:
		return model.Get
	case StrategyWatch:
		return model.Watch
	}
	if s.Version != nil && s.Version.LessThan(firstReferenceSince) {
		return model.EverySync
	}
	return model.FirstReference
}

// WatchLifetime is the mean time the kubelet keeps one object's watch
// open before the apiserver ends it and the kubelet opens it again: a
// timeout drawn from [m, 2m), m = 5 minutes, or 30 from v1.31.
func (s Settings) WatchLifetime() time.Duration {
	if s.Version != nil && s.Version.LessThan(longWatchesSince) {
		return 450 * time.Second
	}
	return 45 * time.Minute
}

// Assumptions stand in for what /configz would say.
type Assumptions struct {
	Strategy      Strategy
	SyncFrequency time.Duration
}

// nodeSettings reads a Node's version and TTL and takes the strategy and
// sync frequency from assume; the caller replaces them with /configz's.
func nodeSettings(node NodeInfo, assume Assumptions) Settings {
	s := Settings{
		KubeletVersion: node.KubeletVersion,
		Strategy:       assume.Strategy,
		SyncFrequency:  assume.SyncFrequency,
		TTL:            defaultTTL,
		Source:         Assumed,
	}
	if v, err := version.ParseGeneric(s.KubeletVersion); err == nil {
		s.Version = v
	} else {
		s.Notes = append(s.Notes, fmt.Sprintf("kubelet version %q not understood: taken to behave as the newest", s.KubeletVersion))
	}
	raw := node.TTL
	if !node.HasTTL {
		s.Notes = append(s.Notes, "no "+TTLAnnotation+" annotation: the kubelet's default TTL of 60 s")
		return s
	}
	seconds, err := strconv.Atoi(raw)
	if err != nil || seconds < 0 {
		s.Notes = append(s.Notes, fmt.Sprintf("%s=%q not a number of seconds: the kubelet's default TTL of 60 s", TTLAnnotation, raw))
		return s
	}
	s.TTL = time.Duration(seconds) * time.Second
	return s
}
