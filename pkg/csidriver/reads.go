package csidriver

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/nodeagent-io/nodeagent/pkg/configmapcache"
)

// ClientAs returns the client of a namespace's ConfigMaps that
// authenticates with token alone (none of the driver's own credentials).
type ClientAs func(token, namespace string) (configmapcache.ConfigMapClient, error)

// Token renewal: a watch whose token expires within renewMargin is opened
// again with a holder's token that expires later, checked every
// renewPeriod. The kubelet renews a pod's token at 80 % of its life (48
// minutes of an hour's token) and hands it over at the next republish.
const (
	renewMargin = 5 * time.Minute
	renewPeriod = time.Minute
)

// podReads reads ConfigMaps as the pods whose volumes name them
// (ReadAsPod): a volume's first read is its pod's own GET, and an object's
// watch authenticates with a token of a pod whose read of it succeeded.
type podReads struct {
	clientAs ClientAs
	creds    *credentials
	// reopen opens a watch again (configmapcache.Watches.Reopen).
	reopen func(namespace, name string)
	clock  clock.WithTicker
}

// errNoPodToken is the watch's error while no pod's read of its ConfigMap
// has succeeded: after a restart, until a republish brings a token (the
// volumes keep their content meanwhile).
var errNoPodToken = errors.New("no pod's token may read it yet: waiting for the kubelet's next publish call of one of its volumes")

// check is the pod's own read of the ConfigMap its volume names, with its
// token: nil where it may get it (a missing one included: the volume's
// mount says so), a PermissionDenied error that names what to check where
// it may not, Unavailable where the apiserver cannot say.
func (r *podReads) check(ctx context.Context, pod podInfo, configMap string, t podToken) error {
	client, err := r.clientAs(t.value, pod.Namespace)
	if err == nil {
		_, err = client.Get(ctx, configMap, metav1.GetOptions{})
	}
	switch {
	case err == nil, apierrors.IsNotFound(err):
		return nil
	case apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err):
		return &accessDenied{pod: pod, configMap: configMap, err: err}
	}
	return fmt.Errorf("reading configmap %s/%s as service account %s: %w", pod.Namespace, configMap, pod.ServiceAccount, err)
}

// accessDenied is a pod's service account refused its ConfigMap.
type accessDenied struct {
	pod       podInfo
	configMap string
	err       error
}

func (e *accessDenied) Error() string {
	return fmt.Sprintf("service account %s/%s may not get configmap %q (%v); check with: kubectl auth can-i get configmaps/%s -n %s --as=system:serviceaccount:%s:%s",
		e.pod.Namespace, e.pod.ServiceAccount, e.configMap, e.err, e.configMap, e.pod.Namespace, e.pod.Namespace, e.pod.ServiceAccount)
}

func (e *accessDenied) Unwrap() error { return e.err }

// hold keeps volumeID's token for its ConfigMap's watch, once its read
// succeeded, and opens the watch again where it had no working token.
func (r *podReads) hold(key objectKey, volumeID string, t podToken) {
	if r.creds.hold(key, volumeID, t, r.clock.Now()) {
		r.reopen(key.namespace, key.name)
	}
}

// release forgets volumeID's token, its volume gone, and opens the watch
// again with another's where it used that one.
func (r *podReads) release(key objectKey, volumeID string) {
	if r.creds.release(key, volumeID) {
		r.reopen(key.namespace, key.name)
	}
}

// client is the client of one ConfigMap's watch: with the token of the
// holder whose token expires last, asked at each list and watch.
func (r *podReads) client(namespace, name string) configmapcache.ConfigMapClient {
	t, ok := r.creds.take(objectKey{namespace, name})
	client, err := r.clientAs(t.value, namespace)
	switch {
	case err != nil:
		return failingClient{err: err}
	case !ok:
		// The client without a token says what kind of watch the
		// reflector may ask for, when the token comes.
		return failingClient{err: fmt.Errorf("configmap %s/%s: %w", namespace, name, errNoPodToken), kind: client}
	}
	return client
}

// Run opens again, until ctx ends, each watch whose token is about to
// expire while a holder has a later one.
func (r *podReads) Run(ctx context.Context) {
	ticker := r.clock.NewTicker(renewPeriod)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C():
		}
		for _, key := range r.creds.expiring(r.clock.Now(), renewMargin) {
			klog.FromContext(ctx).V(2).Info("Opening a watch again with a later token", "configMap", klog.KRef(key.namespace, key.name))
			r.reopen(key.namespace, key.name)
		}
	}
}

// failingClient fails every call with err; kind, where set, is the
// client it stands for.
type failingClient struct {
	err  error
	kind configmapcache.ConfigMapClient
}

// IsWatchListSemanticsUnSupported is kind's: the reflector asks once, at
// its start, whether it may stream its list.
func (c failingClient) IsWatchListSemanticsUnSupported() bool {
	k, ok := c.kind.(interface{ IsWatchListSemanticsUnSupported() bool })
	return ok && k.IsWatchListSemanticsUnSupported()
}

func (c failingClient) Get(context.Context, string, metav1.GetOptions) (*corev1.ConfigMap, error) {
	return nil, c.err
}

func (c failingClient) List(context.Context, metav1.ListOptions) (*corev1.ConfigMapList, error) {
	return nil, c.err
}

func (c failingClient) Watch(context.Context, metav1.ListOptions) (watch.Interface, error) {
	return nil, c.err
}
