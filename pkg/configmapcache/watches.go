package configmapcache

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
)

// Watches keeps one watch per ConfigMap that a source names itself,
// rather than through pods: the CSI driver's volumes. Add opens the
// ConfigMap's watch at its first reference (a LIST and a WATCH with field
// selector metadata.name=<name>, as the Watch strategy's), Remove closes it
// with the last; GetConfigMap reads the watch's copy and never sends a GET.
//
// Two differences from the pods' Watch strategy, both on purpose:
//
//   - it keeps watching a ConfigMap that is immutable. The kubelet stops,
//     to save a watch per object that cannot change; but an immutable
//     ConfigMap can be deleted and recreated under the same name, and a
//     node that stopped watching keeps serving the old object to new pods
//     (kubernetes#131589). Here every volume gets the recreated content,
//     for the price of the watches the kubelet saves (docs/csi.md);
//   - it never stops a watch for idleness: its volumes are read when the
//     watch reports a change, not on pod syncs, so an unread watch is the
//     normal case, not a sign that nothing needs it.
//
// OnChange is called after every change a watch delivers, a relist's
// included, so that the source can remount the volumes of that ConfigMap.
type Watches struct {
	store *watchStore
}

// NewWatches returns an empty set of watches. configMaps returns the client
// of one ConfigMap's watch, asked again each time it lists or watches; clk
// may be nil (the real clock).
func NewWatches(configMaps func(namespace, name string) ConfigMapClient, onChange func(namespace, name string), clk clock.Clock) (*Watches, error) {
	if configMaps == nil {
		return nil, fmt.Errorf("configmapcache: a client is required")
	}
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &Watches{store: &watchStore{
		configMaps: configMaps, onChange: onChange, clock: clk,
		followImmutable: true,
		done:            make(chan struct{}),
		items:           map[objectKey]*watchItem{},
	}}, nil
}

// Add references namespace/name once more, opening its watch at the first.
func (w *Watches) Add(namespace, name string) { w.store.AddReference(namespace, name) }

// Remove drops one reference, closing the watch with the last.
func (w *Watches) Remove(namespace, name string) { w.store.DeleteReference(namespace, name) }

// GetConfigMap returns the watch's copy of namespace/name: a NotFound
// error if it does not exist, an error if the watch has not listed it
// within a second of its start. The name must be referenced.
func (w *Watches) GetConfigMap(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error) {
	return w.store.Get(ctx, namespace, name)
}

// Reopen lists and watches namespace/name anew, if its watch is open: with
// the client configMaps gives now (another pod's token). Its volumes keep
// the object meanwhile.
func (w *Watches) Reopen(namespace, name string) { w.store.reopen(namespace, name) }

// Watching returns how many watches are open.
func (w *Watches) Watching() int { return w.store.running() }

// Stop closes every watch; w must not be used afterwards.
func (w *Watches) Stop() { w.store.Stop() }
