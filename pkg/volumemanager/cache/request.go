package cache

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/nodeagent-io/nodeagent/pkg/volumemanager/atomicwriter"
)

// Request is what a volume's files are made from beside its Spec (the
// sources, items and modes), in terms any source can give: the executor
// reads nothing else, and never a pod. The pods source fills it from the
// pod; the CSI driver from what the kubelet's publish call told it.
type Request struct {
	// Namespace holds the ConfigMaps the volume reads.
	Namespace string
	// FSGroup, if set, is the group the files get, readable by it.
	FSGroup *int64
	// MountPoints are the directories, relative to the volume, on which
	// a container mounts another volume inside this one: made before the
	// files are written, so the container runtime finds them, and left
	// alone by the writer. Each must be a local path whose first element
	// does not begin with "..", a name the writer reserves.
	MountPoints []string
	// Fields, for a projected volume's downwardAPI sources, gives their
	// files; nil fails such sources.
	Fields FieldResolver
	// Subject is the object the volume's events are about (the pod), and
	// the one /debug/volumes names; nil for none.
	Subject runtime.Object
}

// FieldResolver computes the files of a projected volume's downwardAPI
// source: the values of the fields of the object it is for.
type FieldResolver interface {
	DownwardAPIFiles(items []corev1.DownwardAPIVolumeFile, mode int32) (map[string]atomicwriter.FileProjection, error)
}

// SubjectName is "namespace/name" of the request's subject, "" if it has
// none.
func (r *Request) SubjectName() string {
	if r == nil || r.Subject == nil {
		return ""
	}
	m, err := meta.Accessor(r.Subject)
	if err != nil {
		return ""
	}
	return m.GetNamespace() + "/" + m.GetName()
}
