package podrefs

import (
	"iter"
	"path/filepath"
	"sort"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeagent-io/nodeagent/pkg/model"
)

// Plugin is the kubelet's directory name for a kind of volume under
// <root>/pods/<uid>/volumes/.
type Plugin string

const (
	PluginConfigMap Plugin = "kubernetes.io~configmap"
	PluginProjected Plugin = "kubernetes.io~projected"
)

// Plugins lists the volume kinds nodeagent writes.
var Plugins = []Plugin{PluginConfigMap, PluginProjected}

// KeptVolume is one volume of a pod that nodeagent keeps on disk: a
// ConfigMap volume, a Secret volume (the CSI driver's Secrets mode only:
// the agent leaves Secrets to the kubelet), or a projected volume (of which
// it writes the configMap and downwardAPI sources, and the secret sources
// where Secrets are served). Exactly one of ConfigMap, Secret and Projected
// is set.
type KeptVolume struct {
	Name      string
	Plugin    Plugin
	ConfigMap *corev1.ConfigMapVolumeSource
	Secret    *corev1.SecretVolumeSource
	Projected *corev1.ProjectedVolumeSource
}

// VolumeDir is where a pod's volume lives under the root dir, as the
// kubelet lays it out: <root>/pods/<uid>/volumes/<plugin>/<volume>.
func VolumeDir(rootDir string, podUID string, plugin Plugin, volumeName string) string {
	return PodsDirOf(rootDir).VolumeDir(podUID, plugin, volumeName)
}

// PodsDir is <root>/pods/, cleaned once, with its trailing slash.
type PodsDir string

// PodsDirOf is rootDir's PodsDir.
func PodsDirOf(rootDir string) PodsDir { return PodsDir(filepath.Join(rootDir, "pods") + "/") }

// VolumeDir is where a pod's volume lives: VolumeDir's layout, joined
// without cleaning again, the API's UIDs, plugins and volume names being
// single clean path elements (the populator's every pass builds them).
func (d PodsDir) VolumeDir(podUID string, plugin Plugin, volumeName string) string {
	return string(d) + podUID + "/volumes/" + string(plugin) + "/" + volumeName
}

// PodDir is where a pod's volumes live under rootDir: <root>/pods/<uid>.
func PodDir(rootDir, podUID string) string {
	return filepath.Join(rootDir, "pods", podUID)
}

// ConfigMapNames returns the ConfigMaps the volume reads, sorted.
func (v KeptVolume) ConfigMapNames() []string { return v.Names(model.ConfigMap) }

// SecretNames returns the Secrets the volume reads, sorted.
func (v KeptVolume) SecretNames() []string { return v.Names(model.Secret) }

// Names returns the objects of kind the volume reads, sorted.
func (v KeptVolume) Names(kind model.Kind) []string {
	var names []string
	v.eachSource(func(k model.Kind, name string) bool {
		if k == kind {
			names = append(names, name)
		}
		return true
	})
	sort.Strings(names)
	return names
}

// Objects yields each object the volume reads, by kind and name, in its
// sources' order (a name twice where two sources read it).
func (v KeptVolume) Objects() iter.Seq2[model.Kind, string] { return v.eachSource }

// Reads reports whether the volume's content comes in part from the
// object of kind named name. It allocates nothing.
func (v KeptVolume) Reads(kind model.Kind, name string) bool {
	found := false
	v.eachSource(func(k model.Kind, n string) bool {
		found = k == kind && n == name
		return !found
	})
	return found
}

// eachSource calls f with each object the volume reads, until f returns
// false.
func (v KeptVolume) eachSource(f func(kind model.Kind, name string) bool) {
	switch {
	case v.ConfigMap != nil:
		f(model.ConfigMap, v.ConfigMap.Name)
		return
	case v.Secret != nil:
		f(model.Secret, v.Secret.SecretName)
		return
	case v.Projected == nil:
		return
	}
	for _, s := range v.Projected.Sources {
		if s.ConfigMap != nil && !f(model.ConfigMap, s.ConfigMap.Name) || s.Secret != nil && !f(model.Secret, s.Secret.Name) {
			return
		}
	}
}

// NotServed describes the sources of a projected volume that nodeagent
// leaves out of the written volume: service-account tokens, cluster trust
// bundles and pod certificates, and Secrets unless servesSecrets (the CSI
// driver's Secrets mode). Serving the others would need a token minter,
// which nodeagent is not; the agent reads no Secret, on purpose. They never
// fail the volume.
func (v KeptVolume) NotServed(servesSecrets bool) []string {
	if v.Projected == nil {
		return nil
	}
	var out []string
	for _, s := range v.Projected.Sources {
		switch {
		case s.ServiceAccountToken != nil:
			out = append(out, "serviceAccountToken "+s.ServiceAccountToken.Path)
		case s.Secret != nil && !servesSecrets:
			out = append(out, "secret "+s.Secret.Name)
		case s.ClusterTrustBundle != nil:
			out = append(out, "clusterTrustBundle "+s.ClusterTrustBundle.Path)
		case s.PodCertificate != nil:
			out = append(out, "podCertificate")
		}
	}
	return out
}

// KeptVolumes returns the volumes of a pod that nodeagent's agent keeps on
// disk, by name:
// its ConfigMap and projected volumes that at least one container (init,
// regular or ephemeral) mounts. A volume that nothing mounts is never set
// up, as in the kubelet. Mirror pods get none: their static pod's volumes
// belong to the kubelet that runs it.
func KeptVolumes(pod *corev1.Pod) map[string]KeptVolume {
	volumes := map[string]KeptVolume{}
	if IsMirrorPod(pod) {
		return volumes
	}
	mounted := map[string]bool{}
	VisitContainers(pod, func(c *corev1.Container) {
		for _, m := range c.VolumeMounts {
			mounted[m.Name] = true
		}
	})
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		if !mounted[v.Name] {
			continue
		}
		switch {
		case v.ConfigMap != nil:
			volumes[v.Name] = KeptVolume{Name: v.Name, Plugin: PluginConfigMap, ConfigMap: v.ConfigMap}
		case v.Projected != nil:
			volumes[v.Name] = KeptVolume{Name: v.Name, Plugin: PluginProjected, Projected: v.Projected}
		}
	}
	return volumes
}

// KeepsVolumes says whether a node agent keeps pod's volumes on disk now:
// the pod is served (Served) and is not a mirror pod, whose static pod's
// volumes belong to the kubelet that runs it.
func KeepsVolumes(pod *corev1.Pod) bool {
	return Served(pod) && !IsMirrorPod(pod)
}

// IsMirrorPod reports whether pod is the API's mirror of a kubelet's
// static pod.
func IsMirrorPod(pod *corev1.Pod) bool {
	_, ok := pod.Annotations[corev1.MirrorPodAnnotationKey]
	return ok
}

// ServiceAccountOf is the pod spec's service account, as the apiserver
// defaults it: serviceAccountName, else the deprecated serviceAccount,
// else default.
func ServiceAccountOf(spec *corev1.PodSpec) string {
	switch {
	case spec.ServiceAccountName != "":
		return spec.ServiceAccountName
	case spec.DeprecatedServiceAccount != "":
		return spec.DeprecatedServiceAccount
	}
	return "default"
}

// VisitContainers calls f for every init, regular and ephemeral container
// of pod.
func VisitContainers(pod *corev1.Pod, f func(*corev1.Container)) { VisitSpecContainers(&pod.Spec, f) }

// VisitSpecContainers calls f for every init, regular and ephemeral
// container of spec: the one walk over a pod's containers.
func VisitSpecContainers(spec *corev1.PodSpec, f func(*corev1.Container)) {
	for i := range spec.InitContainers {
		f(&spec.InitContainers[i])
	}
	for i := range spec.Containers {
		f(&spec.Containers[i])
	}
	for i := range spec.EphemeralContainers {
		f((*corev1.Container)(&spec.EphemeralContainers[i].EphemeralContainerCommon))
	}
}
