package volumemanager

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodeagent-io/nodeagent/pkg/volumemanager/atomicwriter"
)

// volumeKey names a volume on the node. Volume names are unique within a
// pod, and ConfigMap and projected volumes are per pod, so two pods never
// share one.
type volumeKey struct {
	podUID types.UID
	volume string
}

func (k volumeKey) String() string { return string(k.podUID) + "/" + k.volume }

// desiredPod is one pod of the desired state of world: a pod that has been
// synced and is not being torn down.
type desiredPod struct {
	pod *corev1.Pod
	// volumes are the volumes the pod's containers mount, set by the
	// populator from pod when processed is false.
	volumes map[string]Volume
	// processed is cleared by every WaitForAttachAndMount (the kubelet's
	// ReprocessPod); the populator's next pass re-reads the pod and flags
	// its mounted volumes for a remount.
	processed bool
}

// mountedVolume is one volume of the actual state of world: it is on disk.
type mountedVolume struct {
	key  volumeKey
	pod  *corev1.Pod // nil for a volume reconstructed from disk and not yet re-synced
	spec Volume      // only Plugin and Name are known for a reconstructed volume
	dir  string
	// remountRequired asks the reconciler to read the ConfigMaps again and
	// rewrite the volume; the volume stays mounted meanwhile.
	remountRequired bool
	// resourceVersion and contentHash describe what is on disk; an empty
	// resourceVersion means "not known" (reconstructed, or optional and
	// missing). A projected volume lists name=version per ConfigMap.
	resourceVersion string
	contentHash     string
	// stamp, if not zero, lets a remount that computes the same payload
	// (same contentHash) skip the disk when nothing there changed either.
	stamp atomicwriter.Stamp
}

// State is what /debug/volumes says of a volume.
type State string

const (
	StateMounted        State = "mounted"
	StateRemountPending State = "remount-pending"
	StateMountFailing   State = "mount-failing"
)

// VolumeStatus is one volume as /debug/volumes shows it.
type VolumeStatus struct {
	PodUID          string   `json:"podUID"`
	Pod             string   `json:"pod,omitempty"`
	Volume          string   `json:"volume"`
	Plugin          Plugin   `json:"plugin"`
	ConfigMaps      []string `json:"configMaps,omitempty"`
	Path            string   `json:"path"`
	State           State    `json:"state"`
	ResourceVersion string   `json:"resourceVersion,omitempty"`
	ContentHash     string   `json:"contentHash,omitempty"`
	LastError       string   `json:"lastError,omitempty"`
	// NotServed lists the projected sources left out of the volume
	// (service-account tokens, Secrets, ...): nodeagent does not serve
	// them, and they never fail the volume.
	NotServed []string `json:"notServed,omitempty"`
}

// Operation is what the reconciler does to a volume.
type Operation string

const (
	OpMount   Operation = "mount"
	OpRemount Operation = "remount"
	OpUnmount Operation = "unmount"
)

// operation is one operation in flight.
type operation struct {
	kind Operation
	key  volumeKey
	pod  *corev1.Pod // nil when unmounting a volume reconstructed from disk
	spec Volume
	dir  string
	// lastHash and lastStamp are the contentHash and stamp of what a
	// remounted volume holds (copied: the operation runs without the lock).
	lastHash  string
	lastStamp atomicwriter.Stamp
}
