package configmapcache

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/clock"

	"github.com/nodeagent-io/nodeagent/pkg/model"
	"github.com/nodeagent-io/nodeagent/pkg/podrefs"
)

// Invalidation is when the cache strategy drops a cached object.
type Invalidation string

const (
	// InvalidateEverySync is the kubelet before kubernetes#120255.
	InvalidateEverySync Invalidation = "every-sync"
	// InvalidateFirstReference is the kubelet from v1.29 on.
	InvalidateFirstReference Invalidation = "first-reference"
)

// Invalidations lists the valid values, for flag help.
var Invalidations = []Invalidation{InvalidateEverySync, InvalidateFirstReference}

// Lookup is the outcome of one read of the cache strategy, for metrics.
type Lookup string

const (
	LookupFresh       Lookup = "fresh"       // served from the cache, no GET
	LookupExpired     Lookup = "expired"     // older than the TTL: GET at resourceVersion "0"
	LookupInvalidated Lookup = "invalidated" // dropped by a new reference: quorum GET
	LookupMiss        Lookup = "miss"        // never fetched, or the last fetch failed: quorum GET
)

// Recorder receives the manager's measurements. Declared here so that this
// package does not depend on Prometheus; a nil Recorder records nothing.
type Recorder interface {
	// GetSent counts a GET sent to the apiserver; resourceVersion is "0"
	// or "" (a quorum read).
	GetSent(strategy model.Strategy, resourceVersion string)
	// Lookup counts a cache-strategy read by outcome.
	Lookup(outcome Lookup)
}

// ConfigMapClient is the API the manager uses in one namespace. client-go's
// typed ConfigMapInterface and the agent's core client both satisfy it.
type ConfigMapClient interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.ConfigMap, error)
	List(ctx context.Context, opts metav1.ListOptions) (*corev1.ConfigMapList, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// Options configure New.
type Options struct {
	Strategy     model.Strategy
	Invalidation Invalidation
	// ConfigMaps returns the client of a namespace. The watch strategy's
	// reflectors stream their initial list when that client can (see
	// cache.ToListWatcherWithWatchListSemantics), and list then watch when
	// it says it cannot.
	ConfigMaps func(namespace string) ConfigMapClient
	// Clock decides freshness; nil means the real clock.
	Clock clock.Clock
	// TTL returns the current cache TTL; nil means one minute. Called on
	// every freshness check.
	TTL func() time.Duration
	// Recorder is optional.
	Recorder Recorder
	// SyncFrequency is the agents' S; the watch strategy stops watching a
	// ConfigMap not read for 5·S. Default one minute.
	SyncFrequency time.Duration
	// OnChange, optional, is called by the watch strategy after a watched
	// ConfigMap was added, changed or deleted, so that the agent can
	// remount the pods that use it without waiting for their next sync.
	OnChange func(namespace, name string)
}

// Manager is the agent's source of ConfigMaps.
type Manager interface {
	// GetConfigMap returns the ConfigMap as this strategy knows it. The
	// name must be referenced by a registered pod. A GET it sends, or its
	// wait for a watch's first list, ends when ctx does.
	GetConfigMap(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error)
	// RegisterPod records the ConfigMaps a pod references; it is called on
	// every pod sync.
	RegisterPod(pod *corev1.Pod)
	// UnregisterPod drops the pod's references.
	UnregisterPod(pod *corev1.Pod)
	// Stop releases what the strategy holds open (the watch strategy's
	// watches). The manager must not be used afterwards.
	Stop()
}

// New returns a Manager for opts.Strategy.
func New(opts Options) (Manager, error) {
	if opts.ConfigMaps == nil {
		return nil, fmt.Errorf("configmapcache: a client is required")
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.TTL == nil {
		opts.TTL = func() time.Duration { return time.Minute }
	}
	if opts.Recorder == nil {
		opts.Recorder = nopRecorder{}
	}
	if opts.SyncFrequency <= 0 {
		opts.SyncFrequency = time.Minute
	}
	get := newGetter(opts.ConfigMaps, opts.Strategy, opts.Recorder)
	switch opts.Strategy {
	case model.StrategyGet:
		return getManager{get: get}, nil
	case model.StrategyCache:
		switch opts.Invalidation {
		case InvalidateEverySync, InvalidateFirstReference:
		default:
			return nil, fmt.Errorf("configmapcache: unknown invalidation %q (want one of %v)", opts.Invalidation, Invalidations)
		}
		return newRegistry(newTTLStore(get, opts.Clock, opts.TTL, opts.Recorder), opts.Invalidation), nil
	case model.StrategyWatch:
		// Adding a watch reference never drops data, so the invalidation
		// mode makes no difference here; first-reference keeps the counts
		// simple.
		return newRegistry(newWatchStore(opts.ConfigMaps, opts.OnChange, opts.Clock, opts.SyncFrequency), InvalidateFirstReference), nil
	default:
		return nil, fmt.Errorf("configmapcache: unknown strategy %q (want one of %v)", opts.Strategy, model.Strategies)
	}
}

// getFunc reads one ConfigMap from the apiserver.
type getFunc func(ctx context.Context, namespace, name string, opts metav1.GetOptions) (*corev1.ConfigMap, error)

// getTimeout bounds one GET within its caller's context, so that a dead
// apiserver fails a mount instead of hanging the volume's operation.
const getTimeout = 30 * time.Second

func newGetter(configMaps func(namespace string) ConfigMapClient, strategy model.Strategy, rec Recorder) getFunc {
	return func(ctx context.Context, namespace, name string, opts metav1.GetOptions) (*corev1.ConfigMap, error) {
		rec.GetSent(strategy, opts.ResourceVersion)
		ctx, cancel := context.WithTimeout(ctx, getTimeout)
		defer cancel()
		return configMaps(namespace).Get(ctx, name, opts)
	}
}

// getManager is strategy get: no state at all.
type getManager struct{ get getFunc }

func (m getManager) GetConfigMap(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error) {
	return m.get(ctx, namespace, name, metav1.GetOptions{})
}
func (getManager) RegisterPod(*corev1.Pod)   {}
func (getManager) UnregisterPod(*corev1.Pod) {}
func (getManager) Stop()                     {}

// referenceStore is what the registry needs of a strategy's store.
type referenceStore interface {
	AddReference(namespace, name string)
	DeleteReference(namespace, name string)
	Get(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error)
	Stop()
}

// registry turns pod registrations into store references, with the
// invalidation behaviour chosen.
type registry struct {
	store        referenceStore
	invalidation Invalidation

	mu   sync.Mutex
	pods map[types.UID]*corev1.Pod
}

func newRegistry(store referenceStore, invalidation Invalidation) *registry {
	return &registry{store: store, invalidation: invalidation, pods: map[types.UID]*corev1.Pod{}}
}

func (r *registry) GetConfigMap(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error) {
	return r.store.Get(ctx, namespace, name)
}

func (r *registry) Stop() { r.store.Stop() }

func (r *registry) RegisterPod(pod *corev1.Pod) {
	names := podrefs.ConfigMapNames(pod)
	r.mu.Lock()
	defer r.mu.Unlock()
	prev := r.pods[pod.UID]
	r.pods[pod.UID] = pod
	prevNames := sets.New[string]()
	if prev != nil {
		prevNames = podrefs.ConfigMapNames(prev)
	}
	if r.invalidation == InvalidateEverySync {
		// Before #120255: add every name again, then drop the previous
		// version's references. The count stays the same; the cached
		// objects are gone.
		for name := range names {
			r.store.AddReference(pod.Namespace, name)
		}
		for name := range prevNames {
			r.store.DeleteReference(pod.Namespace, name)
		}
		return
	}
	for name := range names.Difference(prevNames) {
		r.store.AddReference(pod.Namespace, name)
	}
	for name := range prevNames.Difference(names) {
		r.store.DeleteReference(pod.Namespace, name)
	}
}

func (r *registry) UnregisterPod(pod *corev1.Pod) {
	r.mu.Lock()
	defer r.mu.Unlock()
	prev := r.pods[pod.UID]
	if prev == nil {
		return
	}
	delete(r.pods, pod.UID)
	for name := range podrefs.ConfigMapNames(prev) {
		r.store.DeleteReference(prev.Namespace, name)
	}
}

type nopRecorder struct{}

func (nopRecorder) GetSent(model.Strategy, string) {}
func (nopRecorder) Lookup(Lookup)                  {}
