package configmapcache

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
)

// ReferencedNames returns the names of the ConfigMaps that a pod's
// ConfigMap volumes refer to, in the pod's namespace. A volume that no
// container mounts still counts, as in the kubelet: the reference decides
// what the cache keeps, not what is written to disk. Projected volumes and
// environment references are out of nodeagent's scope: it mounts only
// ConfigMap volumes, so it never reads those names.
func ReferencedNames(pod *corev1.Pod) sets.Set[string] {
	names := sets.New[string]()
	for _, v := range pod.Spec.Volumes {
		if v.ConfigMap != nil {
			names.Insert(v.ConfigMap.Name)
		}
	}
	return names
}
