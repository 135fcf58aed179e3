package cache

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/nodeagent-io/nodeagent/pkg/podrefs"
	"github.com/nodeagent-io/nodeagent/pkg/volumemanager/atomicwriter"
)

// MountedVolume is one volume of the actual state of world: it is on disk.
type MountedVolume struct {
	Key VolumeKey
	// Request is what it was last set up from; nil for a volume found on
	// disk at start and not set up since.
	Request *Request
	// Spec is what it was set up from; only Name and Plugin are known for
	// a volume found on disk.
	Spec podrefs.KeptVolume
	Dir  string
	// RemountRequired asks the reconciler to read the ConfigMaps again and
	// rewrite the volume; the volume stays on disk meanwhile.
	RemountRequired bool
	// ResourceVersion and ContentHash describe what is on disk; an empty
	// ResourceVersion means "not known" (found on disk, or optional and
	// missing). A projected volume lists name=version per ConfigMap.
	ResourceVersion string
	ContentHash     string
	// Stamp, if not zero, lets a remount that computes the same payload
	// (same ContentHash) skip the disk when nothing there changed either.
	Stamp atomicwriter.Stamp
}

// ActualState is the actual state of world. The zero value is not usable;
// call NewActualState.
type ActualState struct {
	mu      sync.RWMutex
	volumes map[VolumeKey]*MountedVolume
}

// NewActualState returns an empty actual state.
func NewActualState() *ActualState {
	return &ActualState{volumes: map[VolumeKey]*MountedVolume{}}
}

// MarkMounted records v as on disk, replacing what was recorded of its
// key. A remount flag already set stays set: a remount asked for while v
// was being written is still to come.
func (s *ActualState) MarkMounted(v MountedVolume) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.volumes[v.Key]; ok {
		v.RemountRequired = v.RemountRequired || old.RemountRequired
	}
	s.volumes[v.Key] = &v
}

// AddFound records a volume found on disk at start, unless its key is
// recorded already, and says whether it added it.
func (s *ActualState) AddFound(v MountedVolume) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.volumes[v.Key]; ok {
		return false
	}
	s.volumes[v.Key] = &v
	return true
}

// MarkUnmounted forgets key: it is gone from disk.
func (s *ActualState) MarkUnmounted(key VolumeKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.volumes, key)
}

// MarkRemountRequired flags each of keys that is on disk for a remount.
func (s *ActualState) MarkRemountRequired(keys ...VolumeKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, key := range keys {
		if v, ok := s.volumes[key]; ok {
			v.RemountRequired = true
		}
	}
}

// TakeRemount clears key's remount flag and says whether it was set. The
// reconciler takes the flag as it starts a remount, so a remount asked for
// during it sets the flag again instead of being lost.
func (s *ActualState) TakeRemount(key VolumeKey) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.volumes[key]
	if !ok || !v.RemountRequired {
		return false
	}
	v.RemountRequired = false
	return true
}

// Get returns key's volume, if it is on disk.
func (s *ActualState) Get(key VolumeKey) (MountedVolume, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	v, ok := s.volumes[key]
	if !ok {
		return MountedVolume{}, false
	}
	return *v, true
}

// Has says whether key is on disk.
func (s *ActualState) Has(key VolumeKey) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	_, ok := s.volumes[key]
	return ok
}

// PodVolumes returns the names of pod's volumes on disk.
func (s *ActualState) PodVolumes(pod types.UID) []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []string
	for key := range s.volumes {
		if key.PodUID == pod {
			out = append(out, key.Volume)
		}
	}
	return out
}

// PodUIDs returns the pods with a volume on disk.
func (s *ActualState) PodUIDs() sets.Set[types.UID] {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := sets.New[types.UID]()
	for key := range s.volumes {
		out.Insert(key.PodUID)
	}
	return out
}

// List returns every volume on disk, in no order.
func (s *ActualState) List() []MountedVolume {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]MountedVolume, 0, len(s.volumes))
	for _, v := range s.volumes {
		out = append(out, *v)
	}
	return out
}

// Len is the number of volumes on disk.
func (s *ActualState) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.volumes)
}
