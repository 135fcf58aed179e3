package live

import (
	"bytes"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/cache"

	"github.com/nodeagent-io/nodeagent/pkg/model"
)

// addEventHandlers tells w.events what each event changed. An update
// that changes nothing the analysis reads (a pod's annotation, a Node's
// status report every few minutes, thousands of them a minute on a large
// cluster) neither recomputes nor reads a kubelet's settings again.
func (w *watcher) addEventHandlers() {
	w.handle(w.pods, cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			w.sighted(obj)
			w.events.podsChanged(nodeOf(obj)...)
		},
		UpdateFunc: func(old, obj any) {
			if podEntryChanged(old, obj) {
				w.sighted(obj)
				w.events.podsChanged(append(nodeOf(old), nodeOf(obj)...)...)
			}
		},
		DeleteFunc: func(obj any) {
			if e, ok := untombstoned(obj).(*podEntry); ok {
				w.sightings.gone(e)
			}
			w.events.podsChanged(nodeOf(obj)...)
		},
	})
	w.handle(w.nodes, cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { w.nodeEvent(obj) },
		UpdateFunc: func(old, obj any) {
			o, okOld := old.(*nodeEntry)
			n, okNew := obj.(*nodeEntry)
			if !okOld || !okNew || o.Info != n.Info {
				w.nodeEvent(obj)
			}
		},
		DeleteFunc: func(obj any) { w.nodeEvent(obj) },
	})
	w.handle(w.configMaps, w.objectEvents(model.ConfigMap))
	if w.csiNodes != nil {
		w.handle(w.csiNodes, w.csiNodeEvents())
	}
	if w.namespaces != nil {
		changed := func(obj any) {
			if m, err := meta.Accessor(untombstoned(obj)); err == nil {
				w.events.namespaceChanged(m.GetName())
			}
		}
		w.handle(w.namespaces, cache.ResourceEventHandlerFuncs{AddFunc: changed, UpdateFunc: func(_, obj any) { changed(obj) }, DeleteFunc: changed})
	}
}

// objectEvents tells w.events of each change of an object of kind.
func (w *watcher) objectEvents(kind model.Kind) cache.ResourceEventHandler {
	changed := func(obj any) {
		if m, err := meta.Accessor(untombstoned(obj)); err == nil {
			w.events.objectChanged(objectName{kind: kind, namespace: m.GetNamespace(), name: m.GetName()})
		}
	}
	return cache.ResourceEventHandlerFuncs{AddFunc: changed, UpdateFunc: func(_, obj any) { changed(obj) }, DeleteFunc: changed}
}

// untombstoned is the object a deletion's tombstone holds, or obj.
func untombstoned(obj any) any {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		return tombstone.Obj
	}
	return obj
}

// sighted tells the sightings what a pod's entry says.
func (w *watcher) sighted(obj any) {
	if e, ok := obj.(*podEntry); ok {
		w.sightings.seen(e)
	}
}

// nodeOf is the node of a served pod's entry, none for another.
func nodeOf(obj any) []string {
	if e, ok := untombstoned(obj).(*podEntry); ok && e.Served {
		return []string{e.node.Value()}
	}
	return nil
}

func (w *watcher) nodeEvent(obj any) {
	if n, ok := untombstoned(obj).(*nodeEntry); ok {
		w.events.nodeChanged(n.Info.Name)
	}
}

// podEntryChanged says whether a pod's update changed its inventory entry
// (anything else is taken as a change).
func podEntryChanged(old, obj any) bool {
	before, okOld := old.(*podEntry)
	after, okNew := obj.(*podEntry)
	return !okOld || !okNew || before.Served != after.Served || before.Finished != after.Finished || before.node != after.node || !bytes.Equal(before.packed, after.packed) // at worst a computation for nothing
}

// handle adds handler to inf's; a refusal is a set-up error (check).
func (w *watcher) handle(inf cache.SharedIndexInformer, handler cache.ResourceEventHandler) {
	r, err := inf.AddEventHandler(handler)
	if err != nil {
		w.check("event handler", err)
		return
	}
	w.handlers = append(w.handlers, r)
}
