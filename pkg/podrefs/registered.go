package podrefs

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
)

// ConfigMapNames returns the names of every ConfigMap a pod references, in
// its namespace, as the kubelet's RegisterPod collects them: ConfigMap
// volumes, the configMap sources of projected volumes, and the env and
// envFrom references of every init, regular and ephemeral container. A
// volume that no container mounts still counts: the reference decides what
// the manager keeps, not what is written to disk.
func ConfigMapNames(pod *corev1.Pod) sets.Set[string] {
	names := EnvConfigMapNames(pod)
	for _, v := range pod.Spec.Volumes {
		switch {
		case v.ConfigMap != nil:
			names.Insert(v.ConfigMap.Name)
		case v.Projected != nil:
			for _, s := range v.Projected.Sources {
				if s.ConfigMap != nil {
					names.Insert(s.ConfigMap.Name)
				}
			}
		}
	}
	return names
}

// EnvConfigMapNames returns the ConfigMaps that a pod's containers read into their
// environment (env[].valueFrom.configMapKeyRef and envFrom[].configMapRef),
// which the kubelet reads when it starts a container.
func EnvConfigMapNames(pod *corev1.Pod) sets.Set[string] {
	names := sets.New[string]()
	visit := func(env []corev1.EnvVar, envFrom []corev1.EnvFromSource) {
		for _, e := range envFrom {
			if e.ConfigMapRef != nil {
				names.Insert(e.ConfigMapRef.Name)
			}
		}
		for _, e := range env {
			if e.ValueFrom != nil && e.ValueFrom.ConfigMapKeyRef != nil {
				names.Insert(e.ValueFrom.ConfigMapKeyRef.Name)
			}
		}
	}
	VisitContainers(pod, func(c *corev1.Container) { visit(c.Env, c.EnvFrom) })
	return names
}
