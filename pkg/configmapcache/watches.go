package configmapcache

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/clock"
)

// objectWatches keeps one watch per object that a source names itself,
// rather than through pods: the CSI driver's volumes. Add opens the
// object's watch at its first reference (a LIST and a WATCH with field
// selector metadata.name=<name>, as the Watch strategy's), Remove closes it
// with the last; get reads the watch's copy and never sends a GET.
//
// Two differences from the pods' Watch strategy, both on purpose:
//
//   - it keeps watching an object that is immutable. The kubelet stops,
//     to save a watch per object that cannot change; but an immutable
//     object can be deleted and recreated under the same name, and a
//     node that stopped watching keeps serving the old object to new pods
//     (kubernetes#131589). Here every volume gets the recreated content,
//     for the price of the watches the kubelet saves (docs/csi.md);
//   - it never stops a watch for idleness: its volumes are read when the
//     watch reports a change, not on pod syncs, so an unread watch is the
//     normal case, not a sign that nothing needs it.
//
// onChange is called after every change a watch delivers, a relist's
// included, so that the source can remount the volumes of that object.
type objectWatches[T runtime.Object, L runtime.Object] struct {
	store *watchStore[T, L]
}

func newObjectWatches[T runtime.Object, L runtime.Object](kind objectKind[T], clients func(namespace, name string) listWatcher[L], onChange func(namespace, name string), clk clock.Clock) (objectWatches[T, L], error) {
	if clients == nil {
		return objectWatches[T, L]{}, fmt.Errorf("configmapcache: a client is required")
	}
	if clk == nil {
		clk = clock.RealClock{}
	}
	return objectWatches[T, L]{store: &watchStore[T, L]{
		kind: kind, clients: clients, onChange: onChange, clock: clk,
		followImmutable: true,
		done:            make(chan struct{}),
		items:           map[objectKey]*watchItem{},
	}}, nil
}

// Add references namespace/name once more, opening its watch at the first.
func (w objectWatches[T, L]) Add(namespace, name string) { w.store.AddReference(namespace, name) }

// Remove drops one reference, closing the watch with the last.
func (w objectWatches[T, L]) Remove(namespace, name string) { w.store.DeleteReference(namespace, name) }

// Reopen lists and watches namespace/name anew, if its watch is open: with
// the client the constructor's function gives now (another pod's token).
// Its volumes keep the object meanwhile.
func (w objectWatches[T, L]) Reopen(namespace, name string) { w.store.reopen(namespace, name) }

// Watching returns how many watches are open.
func (w objectWatches[T, L]) Watching() int { return w.store.running() }

// Stop closes every watch; w must not be used afterwards.
func (w objectWatches[T, L]) Stop() { w.store.Stop() }

// Watches are the CSI driver's ConfigMap watches (objectWatches).
type Watches struct {
	objectWatches[*corev1.ConfigMap, *corev1.ConfigMapList]
}

// NewWatches returns an empty set of ConfigMap watches. configMaps returns
// the client of one ConfigMap's watch, asked again each time it lists or
// watches; clk may be nil (the real clock).
func NewWatches(configMaps func(namespace, name string) ConfigMapClient, onChange func(namespace, name string), clk clock.Clock) (*Watches, error) {
	var clients func(namespace, name string) listWatcher[*corev1.ConfigMapList]
	if configMaps != nil {
		clients = func(namespace, name string) listWatcher[*corev1.ConfigMapList] { return configMaps(namespace, name) }
	}
	w, err := newObjectWatches(configMapKind, clients, onChange, clk)
	return &Watches{w}, err
}

// GetConfigMap returns the watch's copy of namespace/name: a NotFound
// error if it does not exist, an error if the watch has not listed it
// within a second of its start. The name must be referenced.
func (w *Watches) GetConfigMap(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error) {
	return w.store.Get(ctx, namespace, name)
}

// SecretClient is the API of one Secret's watch: client-go's typed
// SecretInterface of its namespace.
type SecretClient = listWatcher[*corev1.SecretList]

// SecretWatches are the CSI driver's Secret watches (objectWatches): the
// same rules as its ConfigMaps'.
type SecretWatches struct {
	objectWatches[*corev1.Secret, *corev1.SecretList]
}

// NewSecretWatches returns an empty set of Secret watches, as NewWatches
// does for ConfigMaps.
func NewSecretWatches(secrets func(namespace, name string) SecretClient, onChange func(namespace, name string), clk clock.Clock) (*SecretWatches, error) {
	w, err := newObjectWatches(secretKind, secrets, onChange, clk)
	return &SecretWatches{w}, err
}

// GetSecret returns the watch's copy of namespace/name, as GetConfigMap
// does.
func (w *SecretWatches) GetSecret(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
	return w.store.Get(ctx, namespace, name)
}
