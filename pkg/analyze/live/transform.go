package live

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/nodeagent-io/nodeagent/pkg/podrefs"
	"github.com/nodeagent-io/nodeagent/pkg/podrefs/inventory"
)

// The informers' transforms: each keeps of an object what the inventory
// reads (inventory.NodeInfoOf; of a ConfigMap or a Secret its inventory
// entry alone, ConfigMapInfo and SecretInfo; of a pod, its entry,
// PodInfoOf) and drops the rest before the object is stored, so the informers hold no object's data and a 5,000-node
// cluster's nodes not their image lists.
// An object that is not of the informer's type (a tombstone) passes as it
// is.

// slimMeta is the metadata the inventory reads: names, the creation time,
// the managed fields' times (when an object last changed) and, with
// annotations, the annotations (a Node's TTL, a mirror pod's mark) but
// kubectl's last-applied configuration, which holds a whole object (a
// Secret's data included).
func slimMeta(m metav1.ObjectMeta, annotations bool) metav1.ObjectMeta {
	out := entryMeta(m)
	out.CreationTimestamp, out.DeletionTimestamp = m.CreationTimestamp, m.DeletionTimestamp
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

// podEntry is what the pods informer stores of a pod: its inventory
// entry, made once as the pod arrives, and the metadata the informer keys
// and versions it by; not the pod, whose volumes, mounts and environment
// the entry has read (podrefs.Of) and which would hold twice its memory.
type podEntry struct {
	metav1.TypeMeta
	metav1.ObjectMeta
	// Served says whether its node serves the pod (podrefs.Served); Info
	// is its inventory entry where it does.
	Served bool
	Info   inventory.PodInfo
}

// DeepCopyObject is a shallow copy: nothing changes an entry once made.
func (e *podEntry) DeepCopyObject() runtime.Object {
	c := *e
	return &c
}

// toPodEntry is the pods informer's transform.
func toPodEntry(obj any) (any, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	e := &podEntry{ObjectMeta: entryMeta(p.ObjectMeta), Served: podrefs.Served(p)}
	if e.Served {
		e.Info = inventory.PodInfoOf(p)
	}
	return e, nil
}

// objectEntry is what the ConfigMaps' and Secrets' informers store of an
// object: its inventory entry (whether it can change, when it did, its
// keys' names), made once as it arrives, and the metadata the informer
// keys and versions it by; not the object, whose data is never kept.
type objectEntry struct {
	metav1.TypeMeta
	metav1.ObjectMeta
	Info *inventory.ObjectInfo
}

// DeepCopyObject is a shallow copy: nothing changes an entry once made.
func (e *objectEntry) DeepCopyObject() runtime.Object {
	c := *e
	return &c
}

// entryMeta is the metadata an informer needs of an object.
func entryMeta(m metav1.ObjectMeta) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion}
}

func slimConfigMap(obj any) (any, error) {
	c, ok := obj.(*corev1.ConfigMap)
	if !ok {
		return obj, nil
	}
	return &objectEntry{ObjectMeta: entryMeta(c.ObjectMeta), Info: inventory.ConfigMapInfo(c)}, nil
}

func slimSecret(obj any) (any, error) {
	s, ok := obj.(*corev1.Secret)
	if !ok {
		return obj, nil
	}
	return &objectEntry{ObjectMeta: entryMeta(s.ObjectMeta), Info: inventory.SecretInfo(s)}, nil
}
