// Package podrefs is a pod as its node serves it, the one place where the
// agent, analyze and compare learn it:
//
//   - which pods a node serves (Served) and keeps volumes for (KeepsVolumes);
//   - which ConfigMaps and Secrets a pod makes its node's kubelet read, and
//     when: on every sync of the pod (the objects behind the volumes its
//     containers mount, which the kubelet remounts), or only when a
//     container starts (environment variables, image pull secrets); and,
//     per container, what it holds as it was when it started (subPath
//     mounts, environment) (Of);
//   - which ConfigMap names a sync registers with the ConfigMap manager
//     (ConfigMapNames, registered.go);
//   - which volumes nodeagent's agent keeps on disk, and where, in the
//     kubelet's layout (KeptVolumes, VolumeDir, kept.go);
//   - which volumes nodeagent's CSI driver serves instead of the kubelet,
//     and what their attributes ask for (DriverVolumes, csi.go).
//
// Everything here is a pure function of the pod spec; the package reads no
// API and imports nothing of nodeagent's but the load model's kinds and the
// writer's rules for a volume's paths (atomicwriter, which imports none).
//
// Contract of Of: A volume counts only if
// some container (init, regular or ephemeral) mounts it, as in the
// kubelet's volume manager. ConfigMap, Secret and projected volumes read
// objects; a projected volume reads its ConfigMap and Secret sources in
// order (its service-account token, downward API, cluster trust bundle and
// pod certificate sources read none). Mirror pods read nothing: the API
// forbids their static pods to reference API objects.
package podrefs

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/nodeagent-io/nodeagent/pkg/model"
)

// Ref is one read of one object.
type Ref struct {
	Kind model.Kind
	Name string
	// Optional objects may be missing: the volume or variable is then
	// left empty instead of failing.
	Optional bool
	// Keys are the keys a volume's items (or an env var) name, which the
	// object must hold unless the read is optional; nil for the whole
	// object.
	Keys []string
}

// Volume is one mounted volume that reads objects, or is projected, and
// the objects it reads, in the order it reads them, on every remount.
type Volume struct {
	Name string
	// Secret says the volume is a Secret volume, which nodeagent's agent
	// does not keep (it keeps ConfigMap and projected volumes, and serves
	// no Secret).
	Secret bool
	Reads  []Ref
}

// Refs is everything a pod references, in its namespace.
type Refs struct {
	// Volumes are remounted on every sync of the pod.
	Volumes []Volume
	// ImagePullSecrets are read only when a container starts, as the
	// environment's objects are (Containers' Env).
	ImagePullSecrets []Ref
	// Containers are, per container, the reads whose content never
	// changes while the container runs.
	Containers []Container
	// DriverVolumes are the mounted csi volumes that nodeagent's CSI
	// driver serves (DriverName), which the kubelet reads nothing for. A
	// volume whose attributes the driver refuses never mounts and reads
	// nothing: it is in RefusedDriverVolumes instead.
	DriverVolumes []DriverVolume
	// RefusedDriverVolumes are the mounted csi volumes of the driver whose
	// attributes it refuses (InvalidArgument): the pod never starts.
	RefusedDriverVolumes []RefusedDriverVolume
	// OwnedVolumes are the mounted volumes that ask for their files'
	// owner (owners.go).
	OwnedVolumes []OwnedVolume
}

// RefusedDriverVolume is a volume of the driver whose attributes it
// refuses: its name, the ConfigMap it names (empty if none), and every
// problem found, in the driver's words.
type RefusedDriverVolume struct {
	Name, ConfigMap, Problem string
}

// DriverVolume is one volume the CSI driver serves.
type DriverVolume struct {
	Name  string
	Reads []Ref
	// InPlace: its files are rewritten in place, so a subPath mount of it
	// sees updates (updates: inPlace).
	InPlace bool
}

// Container is what one container (init, regular or ephemeral) holds as
// it was when it started, whatever the kubelet writes later.
type Container struct {
	Name string
	// SubPaths are its mounts, through subPath or subPathExpr, of volumes
	// that read objects: a bind mount of the path as it was at the start,
	// which the atomic writer's later swaps never reach.
	SubPaths []SubPathMount
	// Env are the objects its env and envFrom read, when it is created.
	Env []Ref
}

// SubPathMount is one mount of part of a volume.
type SubPathMount struct {
	Volume, MountPath, SubPath string
	Reads                      []Ref
	// Driver: the volume is the CSI driver's, in its atomic layout (a
	// subPath of an inPlace one is not stale, and is left out).
	Driver bool
}

// Of returns what pod references.
func Of(pod *corev1.Pod) Refs {
	var refs Refs
	if IsMirrorPod(pod) {
		return refs
	}
	mounted := map[string]bool{}
	VisitContainers(pod, func(c *corev1.Container) {
		container := Container{Name: c.Name}
		for _, m := range c.VolumeMounts {
			mounted[m.Name] = true
			if m.SubPath != "" || m.SubPathExpr != "" {
				container.SubPaths = append(container.SubPaths, SubPathMount{Volume: m.Name, MountPath: m.MountPath, SubPath: m.SubPath + m.SubPathExpr})
			}
		}
		container.Env = EnvRefs(c)
		if len(container.SubPaths)+len(container.Env) > 0 {
			refs.Containers = append(refs.Containers, container)
		}
	})
	for _, s := range pod.Spec.ImagePullSecrets {
		refs.ImagePullSecrets = append(refs.ImagePullSecrets, Ref{Kind: model.Secret, Name: s.Name, Optional: true})
	}
	byName, driver := refs.addVolumes(pod, mounted)
	refs.keepStaleableSubPaths(byName, driver)
	return refs
}

// addVolumes adds pod's mounted volumes that read objects, and returns
// what each reads by name, and which are the driver's atomic volumes.
func (refs *Refs) addVolumes(pod *corev1.Pod, mounted map[string]bool) (byName map[string][]Ref, driver map[string]bool) {
	byName, driver = map[string][]Ref{}, map[string]bool{}
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		if !mounted[v.Name] {
			continue
		}
		if fields := ownerFields(v); len(fields) > 0 {
			refs.OwnedVolumes = append(refs.OwnedVolumes, OwnedVolume{Name: v.Name, Fields: fields})
		}
		if refused, ok := refusedDriverVolume(v); ok {
			refs.RefusedDriverVolumes = append(refs.RefusedDriverVolumes, refused)
			continue
		}
		if dv, ok := driverVolume(v); ok {
			refs.DriverVolumes = append(refs.DriverVolumes, dv)
			if !dv.InPlace {
				byName[v.Name], driver[v.Name] = dv.Reads, true // a subPath of it stays as it was
			}
			continue
		}
		reads := volumeReads(v)
		// A projected volume is written whatever its sources, the downward
		// API's alone included; a subPath of it goes stale only with an
		// object it reads.
		if len(reads) > 0 || v.Projected != nil {
			refs.Volumes = append(refs.Volumes, Volume{Name: v.Name, Secret: v.Secret != nil, Reads: reads})
		}
		if len(reads) > 0 {
			byName[v.Name] = reads
		}
	}
	return byName, driver
}

// keepStaleableSubPaths keeps the subPath mounts of volumes that read
// objects: one of a volume that reads none (an emptyDir, a downward API
// volume) holds nothing that could go stale. A container left with no
// subPath mount and no environment reference is dropped.
func (refs *Refs) keepStaleableSubPaths(byName map[string][]Ref, driver map[string]bool) {
	containers := refs.Containers[:0]
	for _, c := range refs.Containers {
		kept := c.SubPaths[:0]
		for _, m := range c.SubPaths {
			if reads, ok := byName[m.Volume]; ok {
				m.Reads, m.Driver = reads, driver[m.Volume]
				kept = append(kept, m)
			}
		}
		c.SubPaths = kept
		if len(c.SubPaths)+len(c.Env) > 0 {
			containers = append(containers, c)
		}
	}
	refs.Containers = containers
}

// EnvRefs are the objects a container's environment reads, once, when it
// starts: envFrom's whole objects (no Keys) and env's single keys.
func EnvRefs(c *corev1.Container) []Ref {
	var env []Ref
	for _, e := range c.EnvFrom {
		if e.ConfigMapRef != nil {
			env = append(env, Ref{Kind: model.ConfigMap, Name: e.ConfigMapRef.Name, Optional: isTrue(e.ConfigMapRef.Optional)})
		}
		if e.SecretRef != nil {
			env = append(env, Ref{Kind: model.Secret, Name: e.SecretRef.Name, Optional: isTrue(e.SecretRef.Optional)})
		}
	}
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			continue
		}
		if r := e.ValueFrom.ConfigMapKeyRef; r != nil {
			env = append(env, Ref{Kind: model.ConfigMap, Name: r.Name, Optional: isTrue(r.Optional), Keys: []string{r.Key}})
		}
		if r := e.ValueFrom.SecretKeyRef; r != nil {
			env = append(env, Ref{Kind: model.Secret, Name: r.Name, Optional: isTrue(r.Optional), Keys: []string{r.Key}})
		}
	}
	return env
}

// Served says whether a node's kubelet (or agent) keeps pod's volumes
// now: the pod is bound to a node, has not finished (a pod that has holds
// no volumes) and is not terminating (its volumes are only torn down,
// never remounted). Every reading of a cluster's load takes the pods it
// counts through this one filter.
func Served(pod *corev1.Pod) bool {
	return pod.Spec.NodeName != "" && !Leaving(pod)
}

// Leaving says whether pod's volumes are only to be torn down: it is being
// deleted, or it has finished.
func Leaving(pod *corev1.Pod) bool {
	return pod.DeletionTimestamp != nil || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

// AgentVolumes counts the volumes of refs, a pod's in namespace, that nodeagent's agent keeps on
// disk, given which objects exist: its ConfigMap and projected volumes,
// but not those a missing required ConfigMap keeps from mounting (the
// agent retries them, and they never reach disk). The agent serves no
// Secret, so Secret volumes are left out and a projected volume's Secret
// sources never fail it. A key that items name and the object lacks also
// fails a mount; Existence does not say, so such a volume is counted.
func AgentVolumes(namespace string, refs Refs, exists Existence) int {
	n := 0
	for _, v := range refs.Volumes {
		if !v.Secret && !missesConfigMap(namespace, v, exists) {
			n++
		}
	}
	return n
}

// missesConfigMap says whether a required ConfigMap that volume v reads in
// namespace is missing.
func missesConfigMap(namespace string, v Volume, exists Existence) bool {
	for _, r := range v.Reads {
		if r.Kind != model.ConfigMap || r.Optional {
			continue
		}
		if found, _, _ := exists(r.Kind, namespace, r.Name); !found {
			return true
		}
	}
	return false
}

// volumeReads is what one volume reads on a remount.
func volumeReads(v *corev1.Volume) []Ref {
	switch {
	case v.ConfigMap != nil:
		return []Ref{{Kind: model.ConfigMap, Name: v.ConfigMap.Name, Optional: isTrue(v.ConfigMap.Optional), Keys: itemKeys(v.ConfigMap.Items)}}
	case v.Secret != nil:
		return []Ref{{Kind: model.Secret, Name: v.Secret.SecretName, Optional: isTrue(v.Secret.Optional), Keys: itemKeys(v.Secret.Items)}}
	case v.Projected != nil:
		var reads []Ref
		for _, s := range v.Projected.Sources {
			if s.ConfigMap != nil {
				reads = append(reads, Ref{Kind: model.ConfigMap, Name: s.ConfigMap.Name, Optional: isTrue(s.ConfigMap.Optional), Keys: itemKeys(s.ConfigMap.Items)})
			}
			if s.Secret != nil {
				reads = append(reads, Ref{Kind: model.Secret, Name: s.Secret.Name, Optional: isTrue(s.Secret.Optional), Keys: itemKeys(s.Secret.Items)})
			}
		}
		return reads
	}
	return nil
}

func isTrue(b *bool) bool { return b != nil && *b }

// itemKeys are the keys a volume's items name; nil where it has none and
// takes the whole object.
func itemKeys(items []corev1.KeyToPath) []string {
	var keys []string
	for _, it := range items {
		keys = append(keys, it.Key)
	}
	return keys
}

// Existence answers what is known of an object: whether it exists, and
// whether it is immutable. known is false where the caller could not list
// that kind (Secrets, often): the object is then taken to exist, mutable.
type Existence func(kind model.Kind, namespace, name string) (exists, immutable, known bool)

// ModelPod is the pod as the load model sees it: its volumes' reads on
// every remount, and, for a volume that cannot mount because an object it
// requires is missing, the reads of each mount attempt (up to and
// including the missing object, where the kubelet stops).
func ModelPod(namespace, name string, refs Refs, exists Existence) model.Pod {
	p := model.Pod{Name: namespace + "/" + name, Volumes: len(refs.Volumes)}
	for _, v := range refs.Volumes {
		var reads []model.Object
		failing := false
		for _, r := range v.Reads {
			found, immutable, _ := exists(r.Kind, namespace, r.Name)
			reads = append(reads, model.Object{Kind: r.Kind, Namespace: namespace, Name: r.Name, Immutable: immutable, Missing: !found})
			if !found && !r.Optional {
				failing = true
				break
			}
		}
		if failing {
			p.Retries = append(p.Retries, reads...)
		} else {
			p.Reads = append(p.Reads, reads...)
		}
	}
	return p
}

// EachRef calls f with every object refs read, in any way: volumes, the
// environment, subPath mounts, image pull secrets and driver volumes. An
// object may come more than once.
func (r Refs) EachRef(f func(kind model.Kind, name string)) {
	each := func(refs []Ref) {
		for _, ref := range refs {
			f(ref.Kind, ref.Name)
		}
	}
	for _, v := range r.Volumes {
		each(v.Reads)
	}
	each(r.ImagePullSecrets)
	for _, c := range r.Containers {
		each(c.Env)
		for _, m := range c.SubPaths {
			each(m.Reads)
		}
	}
	for _, v := range r.DriverVolumes {
		each(v.Reads)
	}
}
