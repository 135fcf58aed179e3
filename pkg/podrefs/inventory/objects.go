package inventory

import (
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeagent-io/nodeagent/pkg/model"
)

// ObjectInfo is what analyze keeps of one listed ConfigMap or Secret:
// whether it can change, when it last did, and the names of its keys;
// never its data.
type ObjectInfo struct {
	Immutable bool
	// Created is its creationTimestamp: when it was created, or last
	// deleted and created again under its name.
	Created time.Time
	// Changed is the latest time any manager changed a field it owns
	// (metadata.managedFields; a label-only change counts too), and Created
	// where the server returned no managedFields (ChangedKnown false).
	Changed      time.Time
	ChangedKnown bool
	// Keys are its data's and binaryData's keys, sorted.
	Keys []string
}

// HasKey says whether the object holds key.
func (o ObjectInfo) HasKey(key string) bool {
	i := sort.SearchStrings(o.Keys, key)
	return i < len(o.Keys) && o.Keys[i] == key
}

// objectInfo reads an object's metadata and keys.
func objectInfo(meta metav1.ObjectMeta, immutable *bool, keys []string) *ObjectInfo {
	info := &ObjectInfo{Immutable: immutable != nil && *immutable, Created: meta.CreationTimestamp.Time, Keys: keys}
	info.Changed = info.Created
	for _, f := range meta.ManagedFields {
		if f.Time != nil {
			info.ChangedKnown = true
			if f.Time.After(info.Changed) {
				info.Changed = f.Time.Time
			}
		}
	}
	sort.Strings(info.Keys)
	return info
}

// ConfigMapInfo is what the inventory keeps of a ConfigMap.
func ConfigMapInfo(c *corev1.ConfigMap) *ObjectInfo {
	keys := make([]string, 0, len(c.Data)+len(c.BinaryData))
	for k := range c.Data {
		keys = append(keys, k)
	}
	for k := range c.BinaryData {
		keys = append(keys, k)
	}
	return objectInfo(c.ObjectMeta, c.Immutable, keys)
}

// SecretInfo is what the inventory keeps of a Secret: never its data.
func SecretInfo(s *corev1.Secret) *ObjectInfo {
	keys := make([]string, 0, len(s.Data)) // StringData is write-only: never returned
	for k := range s.Data {
		keys = append(keys, k)
	}
	return objectInfo(s.ObjectMeta, s.Immutable, keys)
}

// Object is what the inventory knows of an object: its info where it
// exists (nil where it does not), and known false where the caller could
// not list its kind (Secrets, often).
func (inv *Inventory) Object(kind model.Kind, namespace, name string) (info *ObjectInfo, known bool) {
	if kind == model.Secret && !inv.SecretsListed {
		return nil, false
	}
	return inv.objects[objectKey{kind, namespace, name}], true
}

// AddObjectInfo records a listed ConfigMap or Secret.
func (inv *Inventory) AddObjectInfo(kind model.Kind, namespace, name string, info *ObjectInfo) {
	if inv.objects == nil {
		inv.objects = map[objectKey]*ObjectInfo{}
	}
	inv.objects[objectKey{kind, namespace, name}] = info
}

// RemoveObject forgets a ConfigMap or Secret: it no longer exists.
func (inv *Inventory) RemoveObject(kind model.Kind, namespace, name string) {
	delete(inv.objects, objectKey{kind, namespace, name})
}

// AddObject records a listed ConfigMap or Secret of which only its
// immutability is known.
func (inv *Inventory) AddObject(kind model.Kind, namespace, name string, immutable bool) {
	inv.AddObjectInfo(kind, namespace, name, &ObjectInfo{Immutable: immutable})
}

// startTimes are when a pod's running containers last started, by name,
// for the containers whose reads never update while they run, and the
// earliest start of any running container (by which the pod's volumes
// were set up).
func startTimes(pod *corev1.Pod, refs []string) (started []ContainerStart, first time.Time) {
	want := map[string]bool{}
	for _, name := range refs {
		want[name] = true
	}
	statuses := [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses, pod.Status.EphemeralContainerStatuses}
	for _, list := range statuses {
		for _, st := range list {
			running := st.State.Running
			if running == nil || running.StartedAt.IsZero() {
				continue
			}
			at := running.StartedAt.Time
			if first.IsZero() || at.Before(first) {
				first = at
			}
			if want[st.Name] {
				started = append(started, ContainerStart{Container: st.Name, At: at})
			}
		}
	}
	return started, first
}

// OfNode is inv as far as one node goes: that node and its pods (pods),
// with inv's objects and namespaces, shared, not copied.
func (inv *Inventory) OfNode(node NodeInfo, pods []PodInfo) *Inventory {
	c := *inv
	c.Nodes, c.Pods = []NodeInfo{node}, pods
	return &c
}
