package configmapcache

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
)

// syncWait is how long a read waits for a new reflector's first LIST, as
// in the kubelet; past it the read fails and the mount is retried.
const syncWait = time.Second

// minWatchTimeout is the shortest server-side timeout of the reflectors'
// watches, as the kubelet sets it: 30 minutes instead of client-go's 5, so
// that thousands of nodes do not re-establish their watches every few
// minutes.
const minWatchTimeout = 30 * time.Minute

// Idle watches: a reflector whose ConfigMap has not been read for
// maxIdleTime (five sync periods, at least a minute) is stopped, and the
// next read starts it again; checked every recycleIdlePeriod. ConfigMaps
// that volumes use are read on every remount and never idle; those read
// only into containers' environments are.
const (
	minIdleTime       = time.Minute
	recycleIdlePeriod = time.Minute
)

// listWatcher is the API of one object's reflector: client-go's typed
// ConfigMapInterface or SecretInterface of a namespace (L its list type).
type listWatcher[L runtime.Object] interface {
	List(ctx context.Context, opts metav1.ListOptions) (L, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// objectKind is what a watch store needs to know of the objects it
// watches.
type objectKind[T runtime.Object] struct {
	resource schema.GroupResource
	// example is an empty object, the reflector's expected type.
	example T
	// immutable says whether an object can no longer change.
	immutable func(T) bool
}

var (
	configMapKind = objectKind[*corev1.ConfigMap]{resource: corev1.Resource("configmaps"), example: &corev1.ConfigMap{},
		immutable: func(cm *corev1.ConfigMap) bool { return cm.Immutable != nil && *cm.Immutable }}
	secretKind = objectKind[*corev1.Secret]{resource: corev1.Resource("secrets"), example: &corev1.Secret{},
		immutable: func(s *corev1.Secret) bool { return s.Immutable != nil && *s.Immutable }}
)

// watchStore is the watch strategy's store: one reflector per referenced
// object (T, listed as L), so reads never reach the apiserver.
type watchStore[T runtime.Object, L runtime.Object] struct {
	kind objectKind[T]
	// clients is the client of one object's reflector, asked again at
	// each list and watch, so that it may authenticate differently each
	// time (the CSI driver's pods' tokens).
	clients  func(namespace, name string) listWatcher[L]
	onChange func(namespace, name string)
	clock    clock.Clock
	// maxIdleTime is how long an unread watch lives; 0 keeps it.
	maxIdleTime time.Duration
	// followImmutable keeps watching a ConfigMap once it is immutable.
	followImmutable bool
	done            chan struct{}

	mu    sync.Mutex
	items map[objectKey]*watchItem
}

// watchItem is one referenced ConfigMap: its store, which outlives the
// reflector, and the reflector while it runs.
type watchItem struct {
	refCount int
	store    *notifyingStore
	start    func(ctx context.Context)

	mu         sync.Mutex
	stop       context.CancelFunc // nil while stopped
	immutable  bool
	lastAccess time.Time
}

// configMapWatchStore is the pods' Watch strategy's store, and the CSI
// driver's ConfigMap watches.
type configMapWatchStore = watchStore[*corev1.ConfigMap, *corev1.ConfigMapList]

// newWatchStore returns the pods' watch strategy: watches stop when their
// ConfigMap is immutable, or unread for five sync periods.
func newWatchStore(configMaps func(namespace string) ConfigMapClient, onChange func(namespace, name string), clk clock.Clock, syncFrequency time.Duration) *configMapWatchStore {
	s := &configMapWatchStore{
		kind:    configMapKind,
		clients: func(namespace, _ string) listWatcher[*corev1.ConfigMapList] { return configMaps(namespace) }, onChange: onChange, clock: clk,
		maxIdleTime: max(5*syncFrequency, minIdleTime),
		done:        make(chan struct{}),
		items:       map[objectKey]*watchItem{},
	}
	go s.recycleIdleLoop()
	return s
}

func (s *watchStore[T, L]) recycleIdleLoop() {
	for {
		select {
		case <-s.done:
			return
		case <-s.clock.After(recycleIdlePeriod):
			s.recycleIdle()
		}
	}
}

// recycleIdle stops the reflectors that have synced and not been read for
// maxIdleTime.
func (s *watchStore[T, L]) recycleIdle() {
	now := s.clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, item := range s.items {
		item.mu.Lock()
		if item.stop != nil && item.store.synced.Load() && now.After(item.lastAccess.Add(s.maxIdleTime)) {
			item.stop()
			item.stop = nil
		}
		item.mu.Unlock()
	}
}

// running reports how many reflectors run, for tests and debugging.
func (s *watchStore[T, L]) running() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, item := range s.items {
		item.mu.Lock()
		if item.stop != nil {
			n++
		}
		item.mu.Unlock()
	}
	return n
}

// ensureRunning (re)starts the item's reflector unless it runs or its
// ConfigMap is immutable. Called with item.mu held.
func (item *watchItem) ensureRunning() {
	if item.stop != nil || item.immutable {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	item.stop = cancel
	go item.start(ctx)
}

func (item *watchItem) halt() {
	item.mu.Lock()
	defer item.mu.Unlock()
	if item.stop != nil {
		item.stop()
		item.stop = nil
	}
}

func (s *watchStore[T, L]) AddReference(namespace, name string) {
	key := objectKey{namespace, name}
	s.mu.Lock()
	defer s.mu.Unlock()
	if item, ok := s.items[key]; ok {
		item.refCount++
		return
	}
	item := &watchItem{refCount: 1, store: newNotifyingStore(key, s.onChange), lastAccess: s.clock.Now()}
	s.items[key] = item
	selector := fields.OneTermEqualSelector("metadata.name", name).String()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			opts.FieldSelector = selector
			return s.clients(namespace, name).List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.FieldSelector = selector
			return s.clients(namespace, name).Watch(ctx, opts)
		},
	}
	// The wrapper lets the reflector fall back to LIST+WATCH with clients
	// that cannot stream a watch-list (the fake clients of the tests).
	item.start = func(ctx context.Context) {
		reflector := cache.NewReflectorWithOptions(cache.ToListWatcherWithWatchListSemantics(lw, s.clients(namespace, name)), s.kind.example, item.store, cache.ReflectorOptions{
			Name:            s.kind.resource.Resource + " " + namespace + "/" + name,
			MinWatchTimeout: minWatchTimeout,
		})
		reflector.RunWithContext(ctx)
	}
	item.mu.Lock()
	item.ensureRunning()
	item.mu.Unlock()
}

func (s *watchStore[T, L]) DeleteReference(namespace, name string) {
	key := objectKey{namespace, name}
	s.mu.Lock()
	defer s.mu.Unlock()
	item, ok := s.items[key]
	if !ok {
		return
	}
	item.refCount--
	if item.refCount <= 0 {
		item.halt()
		delete(s.items, key)
	}
}

// reopen starts namespace/name's reflector again, if it runs: it lists
// and watches anew, its store keeping the object meanwhile.
func (s *watchStore[T, L]) reopen(namespace, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	item, ok := s.items[objectKey{namespace, name}]
	if !ok {
		return
	}
	item.mu.Lock()
	defer item.mu.Unlock()
	if item.stop != nil {
		item.stop()
		item.stop = nil
		item.ensureRunning()
	}
}

// Stop stops every reflector and the idle recycling.
func (s *watchStore[T, L]) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.done:
	default:
		close(s.done)
	}
	for key, item := range s.items {
		item.halt()
		delete(s.items, key)
	}
}

func (s *watchStore[T, L]) Get(ctx context.Context, namespace, name string) (T, error) {
	var none T
	key := objectKey{namespace, name}
	s.mu.Lock()
	item, ok := s.items[key]
	s.mu.Unlock()
	if !ok {
		return none, fmt.Errorf("%s %s/%s is not referenced by any volume or pod", s.kind.resource.Resource, namespace, name)
	}
	// The read counts as access whether or not it succeeds, and restarts
	// a reflector stopped for idleness; its store keeps the last state
	// meanwhile.
	item.mu.Lock()
	item.lastAccess = s.clock.Now()
	item.ensureRunning()
	item.mu.Unlock()
	err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, syncWait, true,
		func(context.Context) (bool, error) { return item.store.synced.Load(), nil })
	switch {
	case ctx.Err() != nil:
		return none, fmt.Errorf("%s %s/%s: waiting for its watch to list it: %w", s.kind.resource.Resource, namespace, name, ctx.Err())
	case err != nil:
		return none, fmt.Errorf("%s %s/%s: watch not synced within %s", s.kind.resource.Resource, namespace, name, syncWait)
	}
	obj, exists, err := item.store.GetByKey(namespace + "/" + name)
	if err != nil {
		return none, err
	}
	if !exists {
		return none, apierrors.NewNotFound(s.kind.resource, name)
	}
	object := obj.(T)
	if s.kind.immutable(object) && !s.followImmutable {
		// An immutable object can only be deleted and recreated, which
		// pods notice by their UID-bound references, as in the kubelet.
		item.mu.Lock()
		item.immutable = true
		item.mu.Unlock()
		item.halt()
	}
	return object, nil
}

// notifyingStore is a reflector's store that records its first sync and
// reports every change of its one object.
type notifyingStore struct {
	cache.Store
	key      objectKey
	onChange func(namespace, name string)
	synced   atomic.Bool
}

func newNotifyingStore(key objectKey, onChange func(namespace, name string)) *notifyingStore {
	return &notifyingStore{Store: cache.NewStore(cache.MetaNamespaceKeyFunc), key: key, onChange: onChange}
}

func (s *notifyingStore) notify() {
	if s.onChange != nil {
		s.onChange(s.key.namespace, s.key.name)
	}
}

func (s *notifyingStore) Add(obj any) error {
	defer s.notify()
	return s.Store.Add(obj)
}

func (s *notifyingStore) Update(obj any) error {
	defer s.notify()
	return s.Store.Update(obj)
}

func (s *notifyingStore) Delete(obj any) error {
	defer s.notify()
	return s.Store.Delete(obj)
}

// Replace is the reflector's (re)list. The first one marks the store synced
// and is not a change; later ones are.
func (s *notifyingStore) Replace(items []any, resourceVersion string) error {
	err := s.Store.Replace(items, resourceVersion)
	if !s.synced.Swap(true) {
		return err
	}
	s.notify()
	return err
}
