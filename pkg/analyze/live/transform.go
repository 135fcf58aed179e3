package live

import (
	"time"
	"unique"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/nodeagent-io/nodeagent/pkg/podrefs"
	"github.com/nodeagent-io/nodeagent/pkg/podrefs/inventory"
)

// The informers' transforms turn each object, as it arrives, into the
// entry the informer stores: what the inventory reads of it (a Node's
// NodeInfo, a ConfigMap's or a Secret's ObjectInfo, a pod's PodInfo) and
// the names and version the informer keys and versions it by. No object's
// data, and no ObjectMeta, is kept: at 10,000 nodes and 300,000 pods an
// ObjectMeta each (a struct of some 250 bytes, for three strings) was a
// tenth of the analyzer's memory. An object that is not of the informer's
// type (a tombstone) passes as it is.

// entryKey is what an informer needs of a stored entry. It gives it as
// an ObjectMeta made on demand (metav1.ObjectMetaAccessor, which
// meta.Accessor reads), so that the entry need not hold one.
type entryKey struct {
	namespace, name, resourceVersion string
}

func keyOf(m metav1.ObjectMeta) entryKey {
	return entryKey{namespace: m.Namespace, name: m.Name, resourceVersion: m.ResourceVersion}
}

// GetObjectMeta is the entry's names and version: a copy, which nothing
// that reads it changes.
func (k *entryKey) GetObjectMeta() metav1.Object {
	return &metav1.ObjectMeta{Namespace: k.namespace, Name: k.name, ResourceVersion: k.resourceVersion}
}

// GetObjectKind is empty: the informer knows what it stores.
func (*entryKey) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// nodeEntry is what the nodes informer stores of a Node: its name, TTL
// and kubelet version (inventory.NodeInfoOf); not its status, which every
// heartbeat changes, nor its image list.
type nodeEntry struct {
	entryKey
	Info inventory.NodeInfo
}

// DeepCopyObject is a shallow copy: nothing changes an entry once made.
func (e *nodeEntry) DeepCopyObject() runtime.Object {
	c := *e
	return &c
}

func toNodeEntry(obj any) (any, error) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return obj, nil
	}
	return &nodeEntry{entryKey: keyOf(n.ObjectMeta), Info: inventory.NodeInfoOf(n)}, nil
}

// podEntry is what the pods informer stores of a pod: its inventory
// entry, made once as the pod arrives and packed (packed.go); not the
// pod, whose volumes, mounts and environment the entry has read
// (podrefs.Of) and which would hold several times its memory.
type podEntry struct {
	entryKey
	// namespaceHandle keeps the namespace's one copy canonical while the
	// pod is here (names.go).
	namespaceHandle unique.Handle[string]
	// Served says whether its node serves the pod (podrefs.Served); node
	// and packed, its node and its packed inventory entry where it does,
	// or where the pod finished on its node (Finished, with its run):
	// the churn's estimate reads those too (sightings).
	Served   bool
	Finished bool
	node     unique.Handle[string]
	packed   []byte
	run      *finishedRun
}

// finishedRun is when a finished pod's first container started and its
// last ended: kept apart, a pointer, so that the many running pods'
// entries carry eight bytes for it, not forty-eight.
type finishedRun struct{ started, ended time.Time }

// nodeName is the pod's node, "" where it is not served.
func (e *podEntry) nodeName() string {
	if !e.Served {
		return ""
	}
	return e.node.Value()
}

// info is e's inventory entry, its repeated names shared (names.go).
func (e *podEntry) info() inventory.PodInfo {
	return unpackPod(e.namespace, e.name, e.nodeName(), e.packed)
}

// DeepCopyObject is a shallow copy: nothing changes an entry once made.
func (e *podEntry) DeepCopyObject() runtime.Object {
	c := *e
	return &c
}

// toPodEntry is the pods informer's transform, the entries' namespaces
// and nodes shared (names.go).
func toPodEntry(obj any) (any, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	e := &podEntry{entryKey: keyOf(p.ObjectMeta), Served: podrefs.Served(p)}
	e.namespaceHandle = unique.Make(e.namespace)
	e.namespace = e.namespaceHandle.Value()
	e.Finished = p.Spec.NodeName != "" && (p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed)
	if e.Served || e.Finished {
		e.node, e.packed = unique.Make(p.Spec.NodeName), packPod(inventory.PodInfoOf(p))
	}
	if e.Finished {
		e.run = &finishedRun{started: inventory.FirstStartedAt(p), ended: inventory.EndedAt(p)}
	}
	return e, nil
}

// objectEntry is what the ConfigMaps' and Secrets' informers store of an
// object: its inventory entry (whether it can change, when it did, its
// keys' names), made once as it arrives; not the object, whose data is
// never kept.
type objectEntry struct {
	entryKey
	Info *inventory.ObjectInfo
}

// DeepCopyObject is a shallow copy: nothing changes an entry once made.
func (e *objectEntry) DeepCopyObject() runtime.Object {
	c := *e
	return &c
}

func toConfigMapEntry(obj any) (any, error) {
	c, ok := obj.(*corev1.ConfigMap)
	if !ok {
		return obj, nil
	}
	return &objectEntry{entryKey: keyOf(c.ObjectMeta), Info: inventory.ConfigMapInfo(c)}, nil
}

func toSecretEntry(obj any) (any, error) {
	s, ok := obj.(*corev1.Secret)
	if !ok {
		return obj, nil
	}
	return &objectEntry{entryKey: keyOf(s.ObjectMeta), Info: inventory.SecretInfo(s)}, nil
}
