package configmapcache

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
)

type objectKey struct{ namespace, name string }

// ttlStore is the cache strategy's store: reference-counted entries, each
// refreshed when older than the TTL. See the package doc for the rules.
type ttlStore struct {
	get   getFunc
	clock clock.PassiveClock
	ttl   func() time.Duration
	rec   Recorder

	mu    sync.Mutex // guards items, and each item's refCount and data pointer
	items map[objectKey]*ttlItem
}

type ttlItem struct {
	refCount int
	// data is nil after an invalidation; the next Get starts afresh.
	data *ttlData
	// fetched records that some earlier data was fetched, so that a read
	// after an invalidation is told apart from a first read in metrics.
	fetched bool
}

// ttlData is one cached fetch. Its mutex is held across the GET, so that
// concurrent readers of one stale entry wait for a single request.
type ttlData struct {
	mu        sync.Mutex
	object    *corev1.ConfigMap
	err       error
	lastFetch time.Time
}

func newTTLStore(get getFunc, clk clock.PassiveClock, ttl func() time.Duration, rec Recorder) *ttlStore {
	return &ttlStore{get: get, clock: clk, ttl: ttl, rec: rec, items: map[objectKey]*ttlItem{}}
}

// AddReference counts one more reference and drops the cached object: the
// next Get sends a quorum read.
func (s *ttlStore) AddReference(namespace, name string) {
	key := objectKey{namespace, name}
	s.mu.Lock()
	defer s.mu.Unlock()
	item, ok := s.items[key]
	if !ok {
		item = &ttlItem{}
		s.items[key] = item
	}
	item.refCount++
	if item.data != nil {
		item.fetched = true
	}
	item.data = nil
}

// DeleteReference drops one reference; the entry goes with the last one.
func (s *ttlStore) DeleteReference(namespace, name string) {
	key := objectKey{namespace, name}
	s.mu.Lock()
	defer s.mu.Unlock()
	if item, ok := s.items[key]; ok {
		item.refCount--
		if item.refCount <= 0 {
			delete(s.items, key)
		}
	}
}

// Stop does nothing: the cache holds nothing open.
func (s *ttlStore) Stop() {}

// Get returns the cached ConfigMap, fetching it first when it is not fresh.
func (s *ttlStore) Get(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error) {
	data, invalidated, err := s.entry(objectKey{namespace, name})
	if err != nil {
		return nil, err
	}

	data.mu.Lock()
	defer data.mu.Unlock()
	hasGoodObject := data.object != nil && data.err == nil
	switch {
	case hasGoodObject && s.clock.Now().Before(data.lastFetch.Add(s.ttl())):
		s.rec.Lookup(LookupFresh)
		return data.object, nil
	case hasGoodObject:
		s.rec.Lookup(LookupExpired)
	case invalidated:
		s.rec.Lookup(LookupInvalidated)
	default:
		s.rec.Lookup(LookupMiss)
	}

	opts := metav1.GetOptions{}
	if hasGoodObject {
		// The cached object proves the ConfigMap exists; the watch cache's
		// copy is as good as a quorum read for a refresh and costs etcd
		// nothing.
		opts.ResourceVersion = "0"
	}
	object, err := s.get(ctx, namespace, name, opts)
	switch {
	case err == nil:
		if !isOlder(object, data.object) {
			data.object, data.err, data.lastFetch = object, nil, s.clock.Now()
		}
	case apierrors.IsNotFound(err):
		data.object, data.err, data.lastFetch = nil, err, s.clock.Now()
	case data.object == nil && data.err == nil:
		// Nothing cached to fall back on.
		return nil, err
	}
	// Any other error keeps what was cached, timestamp included, so the
	// next read tries again.
	return data.object, data.err
}

// entry returns the data of a registered key, creating it after an
// invalidation, and whether this read follows an invalidation.
func (s *ttlStore) entry(key objectKey) (*ttlData, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	item, ok := s.items[key]
	if !ok {
		return nil, false, fmt.Errorf("configmap %s/%s is not referenced by any registered pod", key.namespace, key.name)
	}
	invalidated := false
	if item.data == nil {
		item.data = &ttlData{}
		invalidated = item.fetched
	}
	return item.data, invalidated, nil
}

// isOlder reports whether candidate has an older resourceVersion than
// current. Unparsable versions (fake clients set none) never count as older.
func isOlder(candidate, current *corev1.ConfigMap) bool {
	if candidate == nil || current == nil {
		return false
	}
	newRV, err1 := strconv.ParseUint(candidate.ResourceVersion, 10, 64)
	oldRV, err2 := strconv.ParseUint(current.ResourceVersion, 10, 64)
	return err1 == nil && err2 == nil && newRV < oldRV
}
