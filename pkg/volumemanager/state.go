package volumemanager

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// volumeKey is a volume's unique name on the node. The kubelet spells it
// kubernetes.io/configmap/<podUID>-<volumeName>; ConfigMap volumes are per
// pod, so two pods never share one.
type volumeKey struct {
	podUID types.UID
	volume string
}

func (k volumeKey) String() string {
	return "kubernetes.io/configmap/" + string(k.podUID) + "-" + k.volume
}

// desiredPod is one pod of the desired state of world: a pod that has been
// synced and is not being torn down.
type desiredPod struct {
	pod *corev1.Pod
	// volumes are the ConfigMap volumes the pod's containers mount, set by
	// the populator from pod when processed is false.
	volumes map[string]*corev1.ConfigMapVolumeSource
	// processed is cleared by every WaitForAttachAndMount (the kubelet's
	// ReprocessPod); the populator's next pass re-reads the pod and flags
	// its mounted volumes for a remount.
	processed bool
}

// mountedVolume is one volume of the actual state of world: it is on disk.
type mountedVolume struct {
	key       volumeKey
	pod       *corev1.Pod // nil for a volume reconstructed from disk and not yet re-synced
	source    *corev1.ConfigMapVolumeSource
	dir       string
	mountedAt time.Time
	// remountRequired asks the reconciler to fetch the ConfigMap and
	// rewrite the volume; the volume stays mounted meanwhile.
	remountRequired bool
	// resourceVersion and contentHash describe what is on disk; an empty
	// resourceVersion means "not known" (reconstructed, or optional and
	// missing).
	resourceVersion string
	contentHash     string
	// lastError is the last failed remount's error, cleared by a success.
	lastError string
}

// VolumeStatus is one volume as /debug/volumes shows it.
type VolumeStatus struct {
	PodUID          string `json:"podUID"`
	Pod             string `json:"pod,omitempty"`
	Volume          string `json:"volume"`
	ConfigMap       string `json:"configMap,omitempty"`
	Path            string `json:"path"`
	State           string `json:"state"` // mounted, remount-pending, mount-failing
	ResourceVersion string `json:"resourceVersion,omitempty"`
	ContentHash     string `json:"contentHash,omitempty"`
	LastError       string `json:"lastError,omitempty"`
}

// failure is a volume's last failed operation.
type failure struct {
	err string
	at  time.Time
}
