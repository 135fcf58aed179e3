// Package live keeps `nodeagent analyze`'s inventory of a cluster current
// from watches instead of one list, and recomputes the analysis when it
// changes (`nodeagent analyze --serve`, docs/analyze.md "Always on").
//
// Contract:
//
//   - One informer per resource: nodes (the node selector's), scheduled pods
//     (field selector spec.nodeName!=), ConfigMaps and, where this user may
//     list them, Secrets, the namespaces labelled for the admission webhook
//     and the CSINodes (where the CSI driver is registered). Each lists once and then watches; client-go's
//     reflectors relist after a 410 Gone or a closed watch, with backoff.
//     Nothing is listed again on a timer.
//   - The informers keep what analyze keeps and no more (transform.go): a
//     ConfigMap's or a Secret's keys without their values, a Node's name,
//     kubelet version and TTL, a pod's references packed in one byte slice
//     (packed.go). No object's data is held.
//   - Every event says what it changed (changes.go): a pod its node, an
//     object the nodes whose pods reference it, a Node itself. The loop
//     recomputes once the events have been quiet for Quiet, or MaxDelay
//     after the first one, whichever comes first, so a burst of changes
//     costs one computation and a change shows within MaxDelay plus the
//     computation; a computation recomputes the parts of the analysis
//     of the nodes the changes touched (analyze.Analysis) and sums them.
//   - The pods seen in the arrival window are remembered, those that went
//     too (sightings.go), for the churn's estimate: the computation after
//     a change estimates it again, and one a minute while pods come and go.
//   - The kubelets' settings (/configz) are read for a node when it is new
//     or its Node changed, and for every node each SettingsInterval; never
//     per computation.
package live

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/nodeagent-io/nodeagent/pkg/model"
	"github.com/nodeagent-io/nodeagent/pkg/podrefs/inventory"
)

// secretsUnlisted is the inventory's note where Secrets may not be listed.
const secretsUnlisted = "this user may not list Secrets: every Secret is taken to exist and to be mutable, and none is reported stale, missing or missing a key"

// watcher holds the informers of one cluster.
type watcher struct {
	nodes, pods, configMaps, secrets cache.SharedIndexInformer
	// namespaces are those labelled for the admission webhook; csiNodes
	// the CSINodes, which say where the CSI driver is registered.
	namespaces, csiNodes cache.SharedIndexInformer
	// events are told what each event changed.
	events events
	// sightings are the pods seen in the arrival window, for the churn.
	sightings *sightings
	// allNodes says the nodes informer holds every node, so that a pod
	// bound to none of them is on a node that does not exist.
	allNodes bool
	failures *listWatchFailures
	client   kubernetes.Interface
	now      func() time.Time
	// handlers are the event handlers' registrations; secretsHandler the
	// Secrets' one, where watched.
	handlers       []cache.ResourceEventHandlerRegistration
	secretsHandler cache.ResourceEventHandlerRegistration
	// setupErrs are the informers' set-up calls that failed (a transform,
	// an index, a handler refused): each would leave the report silently
	// wrong, so newWatcher and addSecrets return them.
	setupErrs []error
}

// events is what the watcher tells of each change: a Node's (its
// kubelet's settings may have changed too), pods' of some nodes, an
// object's, an opted-in namespace's, or a failed list or watch.
type events interface {
	nodeChanged(name string)
	podsChanged(nodes ...string)
	objectChanged(o objectName)
	namespaceChanged(name string)
	driverNodeChanged(name string)
	failed()
}

// listable says which optional resources this user may list.
type listable struct{ secrets, namespaces, csiNodes bool }

// newWatcher builds the informers; may says whether to watch Secrets and
// namespaces at all; failures counts their failed lists and watches. An
// error is a set-up call an informer refused: the watcher is not to be run.
func newWatcher(client kubernetes.Interface, nodeSelector string, arrivalWindow time.Duration, may listable, events events, failures *listWatchFailures, now func() time.Time) (*watcher, error) {
	w := &watcher{client: client, events: events, allNodes: nodeSelector == "", failures: failures, now: now,
		sightings: newSightings(arrivalWindow, now)}
	w.makeInformers(client, nodeSelector)
	if may.namespaces {
		w.namespaces = optedInNamespaces(client)
	}
	if may.csiNodes {
		w.csiNodes = csiNodes(client)
	}
	w.setUp()
	if may.secrets {
		w.addSecrets()
	}
	return w, errors.Join(w.setupErrs...)
}

// setUp gives the informers their watch error handlers, the pods' index by
// node and the event handlers, before they run.
func (w *watcher) setUp() {
	for resource, inf := range map[string]cache.SharedIndexInformer{"nodes": w.nodes, "pods": w.pods, "configmaps": w.configMaps, "namespaces": w.namespaces, "csinodes": w.csiNodes} {
		if inf != nil {
			// A failure computes the report again, so that its warnings
			// say so (client-go retries at most every 30 s meanwhile).
			w.check(resource+" watch error handler", inf.SetWatchErrorHandlerWithContext(w.failures.handler(resource, w.now, w.events.failed)))
		}
	}
	w.check("pods index by node", w.pods.AddIndexers(cache.Indexers{byNode: indexByNode}))
	w.addEventHandlers()
}

// check records a set-up call's error, saying what it set up.
func (w *watcher) check(what string, err error) {
	if err != nil {
		w.setupErrs = append(w.setupErrs, fmt.Errorf("informers: %s: %w", what, err))
	}
}

// addSecrets makes the Secrets' informer, where they may be listed: at
// the start, or once a user who could not list them may (run it then
// with runSecrets). An error is a set-up call the informer refused: the
// Secrets' informer is then left out, as where they may not be listed.
func (w *watcher) addSecrets() error {
	before := len(w.setupErrs)
	secrets := w.client.CoreV1().Secrets("")
	w.secrets = informer(w.client, &corev1.Secret{}, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return secrets.List(ctx, o)
	}, func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		return secrets.Watch(ctx, o)
	}, toSecretEntry)
	w.check("secrets watch error handler", w.secrets.SetWatchErrorHandlerWithContext(w.failures.handler("secrets", w.now, w.events.failed)))
	handler, err := w.secrets.AddEventHandler(w.objectEvents(model.Secret))
	w.check("secrets event handler", err)
	if err := errors.Join(w.setupErrs[before:]...); err != nil {
		w.secrets = nil
		return err
	}
	w.secretsHandler = handler
	return nil
}

// makeInformers makes the informers of the nodes nodeSelector selects, of
// the scheduled pods and of ConfigMaps.
func (w *watcher) makeInformers(client kubernetes.Interface, nodeSelector string) {
	core := client.CoreV1()
	w.nodes = informer(client, &corev1.Node{}, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		o.LabelSelector = nodeSelector
		return core.Nodes().List(ctx, o)
	}, func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		o.LabelSelector = nodeSelector
		return core.Nodes().Watch(ctx, o)
	}, toNodeEntry)
	scheduled := "spec.nodeName!="
	w.pods = informer(client, &corev1.Pod{}, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		o.FieldSelector = scheduled
		return core.Pods("").List(ctx, o)
	}, func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		o.FieldSelector = scheduled
		return core.Pods("").Watch(ctx, o)
	}, toPodEntry)
	w.configMaps = informer(client, &corev1.ConfigMap{}, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return core.ConfigMaps("").List(ctx, o)
	}, func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		return core.ConfigMaps("").Watch(ctx, o)
	}, toConfigMapEntry)
}

// optedInNamespaces is the informer of the namespaces labelled for the
// admission webhook: names and labels are all it keeps.
func optedInNamespaces(client kubernetes.Interface) cache.SharedIndexInformer {
	namespaces := client.CoreV1().Namespaces()
	return informer(client, &corev1.Namespace{}, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		o.LabelSelector = inventory.OptInSelector
		return namespaces.List(ctx, o)
	}, func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		o.LabelSelector = inventory.OptInSelector
		return namespaces.Watch(ctx, o)
	}, nil)
}

// informer is one resource's informer, with transform applied before
// anything is stored. The reflector streams its initial list where the
// client can (a watch-list), and lists where it says it cannot (the fake
// clientset of the tests).
func informer(client any, example runtime.Object, list cache.ListWithContextFunc, watchFunc cache.WatchFuncWithContext, transform cache.TransformFunc) cache.SharedIndexInformer {
	lw := cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{ListWithContextFunc: list, WatchFuncWithContext: watchFunc}, client)
	inf := cache.NewSharedIndexInformer(lw, example, 0, cache.Indexers{})
	if err := inf.SetTransform(transform); err != nil {
		// Only a running informer refuses a transform, and this one is
		// new: a broken invariant, not a condition to report.
		panic(fmt.Sprintf("a new informer refused its transform: %v", err))
	}
	return inf
}

// informers are the watcher's informers, Secrets' and namespaces' where
// watched.
func (w *watcher) informers() []cache.SharedIndexInformer {
	out := []cache.SharedIndexInformer{w.nodes, w.pods, w.configMaps}
	for _, optional := range []cache.SharedIndexInformer{w.secrets, w.namespaces, w.csiNodes} {
		if optional != nil {
			out = append(out, optional)
		}
	}
	return out
}

// run runs the informers until ctx ends.
func (w *watcher) run(ctx context.Context) {
	for _, inf := range w.informers() {
		go inf.RunWithContext(ctx)
	}
}

// synced says whether every informer has listed once and every handler
// has been told of every object listed: the first computation reads the
// whole cluster, and an object's notice that came after it would compute
// its nodes' parts again for nothing (at 5,000 nodes, most of them: a
// second first computation).
func (w *watcher) synced() bool {
	for _, inf := range w.informers() {
		if !inf.HasSynced() {
			return false
		}
	}
	for _, h := range w.handlers {
		if !h.HasSynced() {
			return false
		}
	}
	return w.secretsHandler == nil || w.secretsHandler.HasSynced()
}

// secretsSynced says whether the Secrets' informer has listed them and
// told its handler of each.
func (w *watcher) secretsSynced() bool {
	return w.secrets.HasSynced() && w.secretsHandler.HasSynced()
}

// inventory is the inventory of what the informers hold now but the
// pods, which podsOn gives node by node.
func (w *watcher) inventory() *inventory.Inventory {
	inv := &inventory.Inventory{SecretsListed: w.secrets != nil, Nodes: w.nodeInfos()}
	if w.secrets == nil {
		inv.SecretsUnlisted = secretsUnlisted
	}
	for _, obj := range w.configMaps.GetStore().List() {
		if e, ok := obj.(*objectEntry); ok {
			inv.AddObjectInfo(model.ConfigMap, e.namespace, e.name, e.Info)
		}
	}
	if w.secrets != nil {
		for _, obj := range w.secrets.GetStore().List() {
			if e, ok := obj.(*objectEntry); ok {
				inv.AddObjectInfo(model.Secret, e.namespace, e.name, e.Info)
			}
		}
	}
	if w.namespaces != nil {
		inv.NamespacesListed, inv.OptedIn = true, w.optedIn()
	}
	if w.csiNodes != nil {
		inv.DriverNodesListed, inv.DriverNodes = true, w.driverNodes()
	}
	return inv
}

// nodeInfos are the nodes the informer holds, by name.
func (w *watcher) nodeInfos() []inventory.NodeInfo {
	var out []inventory.NodeInfo
	for _, obj := range w.nodes.GetStore().List() {
		if e, ok := obj.(*nodeEntry); ok {
			out = append(out, e.Info)
		}
	}
	slices.SortFunc(out, func(a, b inventory.NodeInfo) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// optedIn are the namespaces labelled for the admission webhook.
func (w *watcher) optedIn() map[string]bool {
	out := map[string]bool{}
	for _, key := range w.namespaces.GetStore().ListKeys() {
		out[key] = true
	}
	return out
}

// orphans are the served pods bound to nodes that nodes does not hold,
// where the informers hold every node (otherwise a pod of a node the
// selector leaves out is none of the analysis's business).
func (w *watcher) orphans(nodes []inventory.NodeInfo) []string {
	if !w.allNodes {
		return nil
	}
	held := make(map[string]bool, len(nodes))
	for _, n := range nodes {
		held[n.Name] = true
	}
	var out []string
	for _, node := range w.pods.GetIndexer().ListIndexFuncValues(byNode) {
		if held[node] {
			continue
		}
		for _, p := range w.podsOn(node) {
			out = append(out, p.Namespace+"/"+p.Name+" on "+node)
		}
	}
	slices.Sort(out)
	return out
}

// counts are the objects each informer holds.
func (w *watcher) counts() map[string]int {
	out := map[string]int{"nodes": len(w.nodes.GetStore().ListKeys()), "pods": len(w.pods.GetStore().ListKeys()),
		"configmaps": len(w.configMaps.GetStore().ListKeys())}
	if w.secrets != nil {
		out["secrets"] = len(w.secrets.GetStore().ListKeys())
	}
	if w.namespaces != nil {
		out["namespaces"] = len(w.namespaces.GetStore().ListKeys())
	}
	return out
}

// mayList asks the apiserver for one Secret and one namespace: a refusal
// means that resource is not watched (and the report says so for
// Secrets), anything else that it is.
func mayList(ctx context.Context, client kubernetes.Interface) (listable, error) {
	var may listable
	for _, r := range []struct {
		name string
		ok   *bool
		list func() error
	}{
		{"Secrets", &may.secrets, func() error {
			_, err := client.CoreV1().Secrets("").List(ctx, metav1.ListOptions{Limit: 1})
			return err
		}},
		{"namespaces", &may.namespaces, func() error {
			_, err := client.CoreV1().Namespaces().List(ctx, metav1.ListOptions{Limit: 1, LabelSelector: inventory.OptInSelector})
			return err
		}},
		{"CSINodes", &may.csiNodes, func() error {
			_, err := client.StorageV1().CSINodes().List(ctx, metav1.ListOptions{Limit: 1})
			return err
		}},
	} {
		switch err := r.list(); {
		case apierrors.IsForbidden(err):
		case err != nil:
			return may, fmt.Errorf("listing %s: %w", r.name, err)
		default:
			*r.ok = true
		}
	}
	return may, nil
}
