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
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// syncWait is how long a read waits for a new reflector's first LIST, as
// in the kubelet; past it the read fails and the mount is retried.
const syncWait = time.Second

// watchStore is the watch strategy's store: one reflector per referenced
// ConfigMap, so reads never reach the apiserver.
type watchStore struct {
	client   kubernetes.Interface
	onChange func(namespace, name string)

	mu    sync.Mutex
	items map[objectKey]*watchItem
}

type watchItem struct {
	refCount int
	store    *notifyingStore
	stop     context.CancelFunc
	// stopped is set once the reflector has been stopped because the
	// ConfigMap is immutable: its last state is final.
	stopped atomic.Bool
}

func newWatchStore(client kubernetes.Interface, onChange func(namespace, name string)) *watchStore {
	return &watchStore{client: client, onChange: onChange, items: map[objectKey]*watchItem{}}
}

func (s *watchStore) AddReference(namespace, name string) {
	key := objectKey{namespace, name}
	s.mu.Lock()
	defer s.mu.Unlock()
	if item, ok := s.items[key]; ok {
		item.refCount++
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	item := &watchItem{refCount: 1, stop: cancel, store: newNotifyingStore(key, s.onChange)}
	s.items[key] = item
	selector := fields.OneTermEqualSelector("metadata.name", name).String()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			opts.FieldSelector = selector
			return s.client.CoreV1().ConfigMaps(namespace).List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.FieldSelector = selector
			return s.client.CoreV1().ConfigMaps(namespace).Watch(ctx, opts)
		},
	}
	// The wrapper lets the reflector fall back to LIST+WATCH with clients
	// that cannot stream a watch-list (the fake clientset in tests).
	reflector := cache.NewReflectorWithOptions(cache.ToListWatcherWithWatchListSemantics(lw, s.client), &corev1.ConfigMap{}, item.store, cache.ReflectorOptions{
		Name: "configmap " + namespace + "/" + name,
	})
	go reflector.RunWithContext(ctx)
}

func (s *watchStore) DeleteReference(namespace, name string) {
	key := objectKey{namespace, name}
	s.mu.Lock()
	defer s.mu.Unlock()
	item, ok := s.items[key]
	if !ok {
		return
	}
	item.refCount--
	if item.refCount <= 0 {
		item.stop()
		delete(s.items, key)
	}
}

// Stop stops every reflector.
func (s *watchStore) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for key, item := range s.items {
		item.stop()
		delete(s.items, key)
	}
}

func (s *watchStore) Get(namespace, name string) (*corev1.ConfigMap, error) {
	key := objectKey{namespace, name}
	s.mu.Lock()
	item, ok := s.items[key]
	s.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("configmap %s/%s is not referenced by any registered pod", namespace, name)
	}
	err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, syncWait, true,
		func(context.Context) (bool, error) { return item.store.synced.Load(), nil })
	if err != nil {
		return nil, fmt.Errorf("configmap %s/%s: watch not synced within %s", namespace, name, syncWait)
	}
	obj, exists, err := item.store.GetByKey(namespace + "/" + name)
	if err != nil {
		return nil, err
	}
	if !exists {
		return nil, apierrors.NewNotFound(corev1.Resource("configmaps"), name)
	}
	cm := obj.(*corev1.ConfigMap)
	if cm.Immutable != nil && *cm.Immutable && item.stopped.CompareAndSwap(false, true) {
		// An immutable ConfigMap can only be deleted and recreated, which
		// pods notice by their UID-bound references, as in the kubelet.
		item.stop()
	}
	return cm, nil
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
