// Package cache holds the volume manager's two states of world, as plain
// data structures with their own locks (docs/architecture.md, "The volume
// manager"):
//
//   - DesiredState: the volumes wanted on disk, each with what it is made
//     from (Request) and the directory it goes to, keyed by volume and
//     grouped by pod. One source fills it: whoever decides that a volume
//     should exist, the pod workers' syncs through the populator in the
//     agent, the publish calls in the CSI driver (each process has one
//     core, and each core one source). The reconciler reads the desired
//     volumes and never learns where they came from.
//   - ActualState: the volumes on disk, each with its remountRequired flag
//     and what it holds.
//
// Contract: every method takes the state's own lock and calls nothing
// outside the package while holding it, so callers may hold their own
// locks across a call; each returns copies, never a pointer into the state.
package cache

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/nodeagent-io/nodeagent/pkg/model"
	"github.com/nodeagent-io/nodeagent/pkg/podrefs"
)

// VolumeKey names a volume on the node. Volume names are unique within a
// pod, and the volumes nodeagent writes are per pod, so two pods never
// share one.
type VolumeKey struct {
	PodUID types.UID
	Volume string
}

func (k VolumeKey) String() string { return string(k.PodUID) + "/" + k.Volume }

// DesiredVolume is one volume wanted on disk.
type DesiredVolume struct {
	Key VolumeKey
	// Request is what the files are made from beside Spec. Nil means
	// "keep": leave what is on disk as it is, neither set up nor removed
	// (a volume found on disk at start whose pod has not synced yet).
	Request *Request
	Spec    podrefs.KeptVolume
	// Dir is where the volume lives.
	Dir string
	// Layout is how its files lie in Dir.
	Layout Layout
}

// Layout is how a volume's files lie in its directory.
type Layout int

const (
	// LayoutAtomic is the kubelet's: the files in a generation directory
	// behind the ..data symlink, switched whole (atomicwriter).
	LayoutAtomic Layout = iota
	// LayoutInPlace: plain files, each rewritten through its own inode, so
	// that a mount of one file sees updates (inplacewriter).
	LayoutInPlace
)

func (l Layout) String() string {
	if l == LayoutInPlace {
		return "inPlace"
	}
	return "atomic"
}

// Keep says the volume is only to be kept as it is (Request is nil).
func (v DesiredVolume) Keep() bool { return v.Request == nil }

// DesiredState is the desired state of world. The zero value is not
// usable; call NewDesiredState.
type DesiredState struct {
	mu sync.RWMutex
	// volumes by key, by pod (the keys set for each pod) and by the
	// objects they read (kept volumes aside): an object's change finds
	// its volumes without looking at the others.
	volumes  map[VolumeKey]DesiredVolume
	byPod    map[types.UID]sets.Set[VolumeKey]
	byObject map[objectKey]sets.Set[VolumeKey]
}

// objectKey names a ConfigMap or a Secret.
type objectKey struct {
	kind            model.Kind
	namespace, name string
}

// NewDesiredState returns an empty desired state.
func NewDesiredState() *DesiredState {
	return &DesiredState{
		volumes:  map[VolumeKey]DesiredVolume{},
		byPod:    map[types.UID]sets.Set[VolumeKey]{},
		byObject: map[objectKey]sets.Set[VolumeKey]{},
	}
}

// SetPodVolumes makes volumes all that is wanted of pod, replacing what
// was before, and appends to touched the keys wanted before and those
// wanted now: every volume whose desire may have changed. Each volume's
// Key.PodUID must be pod.
//
// A pod's syncs mostly set the volumes it had: that case replaces them in
// place and allocates nothing (unless what one reads changed).
func (s *DesiredState) SetPodVolumes(pod types.UID, volumes []DesiredVolume, touched []VolumeKey) []VolumeKey {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sameVolumesLocked(pod, volumes) {
		for _, v := range volumes {
			if old := s.volumes[v.Key]; !sameReads(old, v) {
				s.unindexLocked(old)
				s.indexLocked(v)
			}
			s.volumes[v.Key] = v
			touched = append(touched, v.Key)
		}
		return touched
	}
	touched = s.deleteLocked(pod, touched)
	if len(volumes) == 0 {
		return touched
	}
	keys := sets.New[VolumeKey]()
	for _, v := range volumes {
		keys.Insert(v.Key)
		s.volumes[v.Key] = v
		s.indexLocked(v)
		touched = append(touched, v.Key)
	}
	s.byPod[pod] = keys
	return touched
}

// sameVolumesLocked says whether volumes have exactly the keys wanted of
// pod now, in the same namespace: only their content may change.
func (s *DesiredState) sameVolumesLocked(pod types.UID, volumes []DesiredVolume) bool {
	keys, ok := s.byPod[pod]
	if !ok || len(keys) != len(volumes) {
		return false
	}
	for _, v := range volumes {
		old, ok := s.volumes[v.Key]
		if !ok || !keys.Has(v.Key) || namespaceOf(old) != namespaceOf(v) {
			return false
		}
	}
	return true
}

// DeletePod forgets every volume wanted of pod, and returns their keys.
func (s *DesiredState) DeletePod(pod types.UID) []VolumeKey {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.deleteLocked(pod, nil)
}

// deleteLocked forgets what is wanted of pod and appends its keys to out.
func (s *DesiredState) deleteLocked(pod types.UID, out []VolumeKey) []VolumeKey {
	keys, ok := s.byPod[pod]
	if !ok {
		return out
	}
	for key := range keys {
		if v, ok := s.volumes[key]; ok {
			s.unindexLocked(v)
			delete(s.volumes, key)
		}
		out = append(out, key)
	}
	delete(s.byPod, pod)
	return out
}

// Get returns the desired volume key, if any source wants it.
func (s *DesiredState) Get(key VolumeKey) (DesiredVolume, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	v, ok := s.volumes[key]
	return v, ok
}

// PodVolumes returns the volumes wanted of pod.
func (s *DesiredState) PodVolumes(pod types.UID) []DesiredVolume {
	s.mu.RLock()
	defer s.mu.RUnlock()
	keys := s.byPod[pod]
	out := make([]DesiredVolume, 0, len(keys))
	for key := range keys {
		out = append(out, s.volumes[key])
	}
	return out
}

// PodUIDs returns every pod volumes are wanted of.
func (s *DesiredState) PodUIDs() sets.Set[types.UID] {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := sets.New[types.UID]()
	for pod := range s.byPod {
		out.Insert(pod)
	}
	return out
}

// VolumesReading returns the volumes set up from the object of kind
// namespace/name (kept volumes, which are not set up, are left out). Every
// watch event asks it: it looks at those volumes alone (byObject), and
// allocates nothing where none reads the object.
func (s *DesiredState) VolumesReading(kind model.Kind, namespace, name string) []VolumeKey {
	s.mu.RLock()
	defer s.mu.RUnlock()
	keys := s.byObject[objectKey{kind, namespace, name}]
	if len(keys) == 0 {
		return nil
	}
	return keys.UnsortedList()
}

// indexLocked files v under each object it reads; kept volumes read
// nothing yet.
func (s *DesiredState) indexLocked(v DesiredVolume) {
	if v.Keep() {
		return
	}
	for kind, name := range v.Spec.Objects() {
		o := objectKey{kind, v.Request.Namespace, name}
		if s.byObject[o] == nil {
			s.byObject[o] = sets.New[VolumeKey]()
		}
		s.byObject[o].Insert(v.Key)
	}
}

// unindexLocked undoes indexLocked(v).
func (s *DesiredState) unindexLocked(v DesiredVolume) {
	if v.Keep() {
		return
	}
	for kind, name := range v.Spec.Objects() {
		o := objectKey{kind, v.Request.Namespace, name}
		if s.byObject[o].Delete(v.Key); s.byObject[o].Len() == 0 {
			delete(s.byObject, o)
		}
	}
}

// sameReads says whether a and b read the same objects, so that the
// index holds for either: both kept, or both set up in one namespace
// from sources that name the same objects.
func sameReads(a, b DesiredVolume) bool {
	if a.Keep() || b.Keep() {
		return a.Keep() == b.Keep()
	}
	if a.Request.Namespace != b.Request.Namespace {
		return false
	}
	for kind, name := range a.Spec.Objects() {
		if !b.Spec.Reads(kind, name) {
			return false
		}
	}
	for kind, name := range b.Spec.Objects() {
		if !a.Spec.Reads(kind, name) {
			return false
		}
	}
	return true
}

func namespaceOf(v DesiredVolume) string {
	if v.Request == nil {
		return ""
	}
	return v.Request.Namespace
}
