package live

import (
	"context"

	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/nodeagent-io/nodeagent/pkg/podrefs/inventory"
)

// csiNodeEntry is what the CSINodes' informer stores of a CSINode: whether
// it lists nodeagent's CSI driver (inventory.DriverRegistered).
type csiNodeEntry struct {
	entryKey
	registered bool
}

// DeepCopyObject is a shallow copy: nothing changes an entry once made.
func (e *csiNodeEntry) DeepCopyObject() runtime.Object {
	c := *e
	return &c
}

func toCSINodeEntry(obj any) (any, error) {
	n, ok := obj.(*storagev1.CSINode)
	if !ok {
		return obj, nil
	}
	return &csiNodeEntry{entryKey: keyOf(n.ObjectMeta), registered: inventory.DriverRegistered(n)}, nil
}

// csiNodes is the informer of the CSINodes, where they may be listed.
func csiNodes(client kubernetes.Interface) cache.SharedIndexInformer {
	nodes := client.StorageV1().CSINodes()
	return informer(client, &storagev1.CSINode{}, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return nodes.List(ctx, o)
	}, func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		return nodes.Watch(ctx, o)
	}, toCSINodeEntry)
}

// csiNodeEvents tells w.events of a node whose driver came or went.
func (w *watcher) csiNodeEvents() cache.ResourceEventHandler {
	changed := func(obj any) {
		if e, ok := untombstoned(obj).(*csiNodeEntry); ok {
			w.events.driverNodeChanged(e.name)
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: changed,
		UpdateFunc: func(old, obj any) {
			o, okOld := old.(*csiNodeEntry)
			n, okNew := obj.(*csiNodeEntry)
			if !okOld || !okNew || o.registered != n.registered {
				changed(obj)
			}
		},
		DeleteFunc: changed,
	}
}

// driverNodes are the nodes whose CSINode lists the driver now.
func (w *watcher) driverNodes() map[string]bool {
	out := map[string]bool{}
	for _, obj := range w.csiNodes.GetStore().List() {
		if e, ok := obj.(*csiNodeEntry); ok && e.registered {
			out[e.name] = true
		}
	}
	return out
}
