package agent

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/nodeagent-io/nodeagent/pkg/coreclient"
)

// eventsConfig is rc with the events' own rate limit, as the kubelet's
// (--event-qps, --event-burst).
func eventsConfig(rc *rest.Config, cfg Config) *rest.Config {
	return EventsRESTConfig(rc, cfg.EventQPS, cfg.EventBurst)
}

// EventsRESTConfig is rc for a client of events alone, with their own rate
// limit (qps 0: none), as the kubelet's --event-qps and --event-burst:
// events must not wait behind the volumes' requests, nor delay them.
func EventsRESTConfig(rc *rest.Config, qps float32, burst int) *rest.Config {
	ec := rest.CopyConfig(rc)
	ec.QPS, ec.Burst = qps, burst
	if qps == 0 {
		ec.QPS = -1 // client-go: no rate limiter
	}
	return ec
}

// newPodInformer informs on the pods bound to node, as the kubelet's pod
// source does: one LIST and WATCH with a spec.nodeName field selector.
func newPodInformer(client *coreclient.Client, node string) cache.SharedIndexInformer {
	pods := client.Pods(metav1.NamespaceAll)
	return fieldSelectedInformer(fields.OneTermEqualSelector("spec.nodeName", node).String(), &corev1.Pod{}, client,
		func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return pods.List(ctx, opts)
		},
		pods.Watch)
}

// newNodeInformer informs on the agent's own Node, for its TTL annotation
// and its allocatable resources.
func newNodeInformer(client *coreclient.Client, node string) cache.SharedIndexInformer {
	nodes := client.Nodes()
	return fieldSelectedInformer(fields.OneTermEqualSelector("metadata.name", node).String(), &corev1.Node{}, client,
		func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return nodes.List(ctx, opts)
		},
		nodes.Watch)
}

// fieldSelectedInformer is the informer client-go's informer factory would
// build for one resource with a field selector, without the factory (which
// links every API group's informers): same list and watch requests, no
// resync, indexed by namespace for the listers.
func fieldSelectedInformer(selector string, example runtime.Object, client any,
	list func(context.Context, metav1.ListOptions) (runtime.Object, error),
	watchFunc func(context.Context, metav1.ListOptions) (watch.Interface, error)) cache.SharedIndexInformer {
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			opts.FieldSelector = selector
			return list(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.FieldSelector = selector
			return watchFunc(ctx, opts)
		},
	}
	return cache.NewSharedIndexInformerWithOptions(cache.ToListWatcherWithWatchListSemantics(lw, client), example,
		cache.SharedIndexInformerOptions{Indexers: cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}})
}
