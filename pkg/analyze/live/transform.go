package live

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The informers' transforms: each keeps of an object what the inventory
// reads (inventory.NodeInfoOf, PodInfoOf, ConfigMapInfo, SecretInfo) and
// drops the rest before the object is stored, so the informers hold no
// object's data and a 5,000-node cluster's nodes not their image lists.
// An object that is not of the informer's type (a tombstone) passes as it
// is.

// slimMeta is the metadata the inventory reads: names, the creation time,
// the managed fields' times (when an object last changed) and, with
// annotations, the annotations (a Node's TTL, a mirror pod's mark) but
// kubectl's last-applied configuration, which holds a whole object (a
// Secret's data included).
func slimMeta(m metav1.ObjectMeta, annotations bool) metav1.ObjectMeta {
	out := metav1.ObjectMeta{Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion,
		CreationTimestamp: m.CreationTimestamp, DeletionTimestamp: m.DeletionTimestamp}
	if annotations {
		for k, v := range m.Annotations {
			if k == corev1.LastAppliedConfigAnnotation {
				continue
			}
			if out.Annotations == nil {
				out.Annotations = map[string]string{}
			}
			out.Annotations[k] = v
		}
	}
	for _, f := range m.ManagedFields {
		// The time alone: analyze reads when an object changed, never what.
		out.ManagedFields = append(out.ManagedFields, metav1.ManagedFieldsEntry{Manager: f.Manager, Operation: f.Operation, Time: f.Time})
	}
	return out
}

func slimNode(obj any) (any, error) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return obj, nil
	}
	// Its name, annotations (the TTL) and kubelet version
	// (inventory.NodeInfoOf); not when it changed, which every status
	// report does.
	out := &corev1.Node{ObjectMeta: slimMeta(n.ObjectMeta, true)}
	out.ManagedFields = nil
	out.Status.NodeInfo.KubeletVersion = n.Status.NodeInfo.KubeletVersion
	return out, nil
}

// slimPod keeps what podrefs.Of and the inventory read of a pod: its node,
// volumes, image pull secrets, each container's name, mounts, env and
// envFrom, its phase and its containers' states; not images, commands,
// resources, probes, scheduling or conditions.
func slimPod(obj any) (any, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	out := &corev1.Pod{ObjectMeta: slimMeta(p.ObjectMeta, true)}
	out.Spec = corev1.PodSpec{NodeName: p.Spec.NodeName, Volumes: p.Spec.Volumes, ImagePullSecrets: p.Spec.ImagePullSecrets,
		InitContainers: slimContainers(p.Spec.InitContainers), Containers: slimContainers(p.Spec.Containers)}
	for _, e := range p.Spec.EphemeralContainers {
		c := slimContainers([]corev1.Container{corev1.Container(e.EphemeralContainerCommon)})[0]
		out.Spec.EphemeralContainers = append(out.Spec.EphemeralContainers, corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon(c)})
	}
	out.Status = corev1.PodStatus{Phase: p.Status.Phase,
		InitContainerStatuses: slimStatuses(p.Status.InitContainerStatuses), ContainerStatuses: slimStatuses(p.Status.ContainerStatuses),
		EphemeralContainerStatuses: slimStatuses(p.Status.EphemeralContainerStatuses)}
	return out, nil
}

func slimContainers(cs []corev1.Container) []corev1.Container {
	if cs == nil {
		return nil
	}
	out := make([]corev1.Container, len(cs))
	for i, c := range cs {
		out[i] = corev1.Container{Name: c.Name, VolumeMounts: c.VolumeMounts, Env: c.Env, EnvFrom: c.EnvFrom}
	}
	return out
}

func slimStatuses(ss []corev1.ContainerStatus) []corev1.ContainerStatus {
	if ss == nil {
		return nil
	}
	out := make([]corev1.ContainerStatus, len(ss))
	for i, s := range ss {
		out[i] = corev1.ContainerStatus{Name: s.Name, State: s.State}
	}
	return out
}

// keysOnly keeps a data map's keys, each with an empty value.
func keysOnly[V any](m map[string]V) map[string]V {
	if m == nil {
		return nil
	}
	out := make(map[string]V, len(m))
	var zero V
	for k := range m {
		out[k] = zero
	}
	return out
}

func slimConfigMap(obj any) (any, error) {
	c, ok := obj.(*corev1.ConfigMap)
	if !ok {
		return obj, nil
	}
	return &corev1.ConfigMap{ObjectMeta: slimMeta(c.ObjectMeta, false), Immutable: c.Immutable,
		Data: keysOnly(c.Data), BinaryData: keysOnly(c.BinaryData)}, nil
}

func slimSecret(obj any) (any, error) {
	s, ok := obj.(*corev1.Secret)
	if !ok {
		return obj, nil
	}
	return &corev1.Secret{ObjectMeta: slimMeta(s.ObjectMeta, false), Immutable: s.Immutable, Type: s.Type, Data: keysOnly(s.Data)}, nil
}
