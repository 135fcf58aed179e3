package analyze

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/version"

	"github.com/nodeagent-io/nodeagent/pkg/model"
	"github.com/nodeagent-io/nodeagent/pkg/podrefs/inventory"
)

// Source says where a node's strategy and sync frequency came from.
type Source string

const (
	// FromConfigz: read from the kubelet's /configz.
	FromConfigz Source = "configz"
	// Assumed: the caller's assumption (--assume-strategy,
	// --assume-sync-frequency), because /configz could not be read.
	Assumed Source = "assumed"
)

// Settings is what decides one node's kubelet's requests.
type Settings struct {
	KubeletVersion string
	// Version is KubeletVersion parsed; nil where it could not be, and the
	// node is then taken to behave as the newest kubelets do.
	Version       *version.Version
	Strategy      model.Strategy
	SyncFrequency time.Duration
	TTL           time.Duration
	Source        Source
	// FeatureGates are the kubelet's --feature-gates as /configz says
	// them; nil where the settings are assumed.
	FeatureGates map[string]bool
	// Notes say what was assumed or went wrong for this node.
	Notes []string
}

// atomicWriteVolumeUserFields is the kubelet's gate of KEP-5936: alpha and
// off by default in v1.37, beta and on by default from v1.38.
const atomicWriteVolumeUserFields = "AtomicWriteVolumeUserFields"

// SetsVolumeOwners says whether the kubelet sets the owners that volumes'
// defaultUser and items' user ask for: from v1.38 unless its gates turn
// them off, in v1.37 only where they turn them on, never before (an
// unknown version is taken as the newest).
func (s Settings) SetsVolumeOwners() bool {
	on, set := s.FeatureGates[atomicWriteVolumeUserFields]
	switch {
	case s.Version == nil || s.Version.AtLeast(version.MajorMinor(1, 38)):
		return !set || on
	case s.Version.AtLeast(version.MajorMinor(1, 37)):
		return on
	}
	return false
}

// Behaviour is the load model's behaviour for these settings, from its
// table of kubelet releases and strategies.
func (s Settings) Behaviour() model.Behaviour { return model.KubeletBehaviour(s.Version, s.Strategy) }

// WatchLifetime is the mean time the kubelet keeps one object's watch
// open before the apiserver ends it and the kubelet opens it again.
func (s Settings) WatchLifetime() time.Duration { return model.KubeletWatchLifetime(s.Version) }

// Assumptions stand in for what /configz would say.
type Assumptions struct {
	Strategy      model.Strategy
	SyncFrequency time.Duration
}

// AssumedSettings reads a Node's version and TTL and takes the strategy
// and sync frequency from assume; the caller replaces them with /configz's.
func AssumedSettings(node inventory.NodeInfo, assume Assumptions) Settings {
	s := Settings{
		KubeletVersion: node.KubeletVersion,
		Strategy:       assume.Strategy,
		SyncFrequency:  assume.SyncFrequency,
		TTL:            node.TTL,
		Source:         Assumed,
	}
	if v, err := version.ParseGeneric(s.KubeletVersion); err == nil {
		s.Version = v
	} else {
		s.Notes = append(s.Notes, fmt.Sprintf("kubelet version %q not understood: taken to behave as the newest", s.KubeletVersion))
	}
	if node.TTLMissing != "" {
		s.Notes = append(s.Notes, node.TTLMissing+": the kubelet's default TTL of 60 s")
	}
	return s
}
