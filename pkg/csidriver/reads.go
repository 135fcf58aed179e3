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
	"github.com/nodeagent-io/nodeagent/pkg/model"
)

// ClientAs returns the API of a namespace's ConfigMaps and Secrets that
// authenticates with token alone (none of the driver's own credentials).
type ClientAs func(token, namespace string) (PodAPI, error)

// PodAPI is what the driver reads as a pod, in the pod's namespace.
type PodAPI struct {
	ConfigMaps configmapcache.ConfigMapClient
	Secrets    SecretClient
}

// SecretClient is a namespace's Secrets as the driver reads them: client-go's
// typed SecretInterface, or the agent's core client.
type SecretClient interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.Secret, error)
	configmapcache.SecretClient
}

// Token renewal: a watch whose token expires within renewMargin is opened
// again with a holder's token that expires later, checked every
// renewPeriod. The kubelet renews a pod's token at 80 % of its life (48
// minutes of an hour's token) and hands it over at the next republish.
const (
	renewMargin = 5 * time.Minute
	renewPeriod = time.Minute
)

// podReads reads objects as the pods whose volumes name them (ReadAsPod):
// a volume's first read is its pod's own GET, and an object's watch
// authenticates with a token of a pod whose read of it succeeded.
type podReads struct {
	clientAs ClientAs
	creds    *credentials
	// reopen opens a watch again (configmapcache.Watches.Reopen).
	reopen func(ref objectRef)
	clock  clock.WithTicker
}

// errNoPodToken is the watch's error while no pod's read of its object
// has succeeded: after a restart, until a republish brings a token (the
// volumes keep their content meanwhile).
var errNoPodToken = errors.New("no pod's token may read it yet: waiting for the kubelet's next publish call of one of its volumes")

// check is the pod's own read of an object its volume names, with its
// token: nil where it may get it (a missing one included: the volume's
// mount says so), a PermissionDenied error that names what to check where
// it may not, Unavailable where the apiserver cannot say.
func (r *podReads) check(ctx context.Context, pod podInfo, ref objectRef, t podToken) error {
	api, err := r.clientAs(t.value, pod.Namespace)
	if err == nil {
		if ref.kind == model.Secret {
			_, err = api.Secrets.Get(ctx, ref.name, metav1.GetOptions{})
		} else {
			_, err = api.ConfigMaps.Get(ctx, ref.name, metav1.GetOptions{})
		}
	}
	switch {
	case err == nil, apierrors.IsNotFound(err):
		return nil
	case apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err):
		return &accessDenied{pod: pod, object: ref, err: err}
	}
	return fmt.Errorf("reading %s %s/%s as service account %s: %w", resourceOf(ref.kind), pod.Namespace, ref.name, pod.ServiceAccount, err)
}

// resourceOf is the API's resource of a kind of object.
func resourceOf(kind model.Kind) string {
	if kind == model.Secret {
		return "secrets"
	}
	return "configmaps"
}

// accessDenied is a pod's service account refused an object.
type accessDenied struct {
	pod    podInfo
	object objectRef
	err    error
}

func (e *accessDenied) Error() string {
	resource := resourceOf(e.object.kind)
	return fmt.Sprintf("service account %s/%s may not get %s %q (%v); check with: kubectl auth can-i get %s/%s -n %s --as=system:serviceaccount:%s:%s",
		e.pod.Namespace, e.pod.ServiceAccount, resource, e.object.name, e.err, resource, e.object.name, e.pod.Namespace, e.pod.Namespace, e.pod.ServiceAccount)
}

func (e *accessDenied) Unwrap() error { return e.err }

// hold keeps volumeID's token for an object's watch, once its read
// succeeded, and opens the watch again where it had no working token.
func (r *podReads) hold(ref objectRef, volumeID string, t podToken) {
	if r.creds.hold(ref, volumeID, t, r.clock.Now()) {
		r.reopen(ref)
	}
}

// holdAll holds volumeID's token for the watch of each object spec reads.
func (r *podReads) holdAll(spec volumeSpec, volumeID string, t podToken) {
	for _, ref := range spec.objects() {
		r.hold(ref, volumeID, t)
	}
}

// release forgets volumeID's token, its volume gone, and opens the watch
// again with another's where it used that one.
func (r *podReads) release(ref objectRef, volumeID string) {
	if r.creds.release(ref, volumeID) {
		r.reopen(ref)
	}
}

// api is the API of one object's watch: with the token of the holder
// whose token expires last, asked at each list and watch; an error where
// there is none yet.
func (r *podReads) api(ref objectRef) (PodAPI, error) {
	t, ok := r.creds.take(ref)
	api, err := r.clientAs(t.value, ref.namespace)
	switch {
	case err != nil:
		return PodAPI{}, err
	case !ok:
		return api, fmt.Errorf("%s %s/%s: %w", resourceOf(ref.kind), ref.namespace, ref.name, errNoPodToken)
	}
	return api, nil
}

// configMapClient is the client of one ConfigMap's watch (api).
func (r *podReads) configMapClient(namespace, name string) configmapcache.ConfigMapClient {
	api, err := r.api(objectRef{kind: model.ConfigMap, namespace: namespace, name: name})
	if err != nil {
		// The client without a token, if any, says what kind of watch the
		// reflector may ask for, when the token comes.
		return failingClient[*corev1.ConfigMap, *corev1.ConfigMapList]{err: err, kind: api.ConfigMaps}
	}
	return api.ConfigMaps
}

// secretClient is the client of one Secret's watch (api).
func (r *podReads) secretClient(namespace, name string) configmapcache.SecretClient {
	api, err := r.api(objectRef{kind: model.Secret, namespace: namespace, name: name})
	if err != nil {
		return failingClient[*corev1.Secret, *corev1.SecretList]{err: err, kind: api.Secrets}
	}
	return api.Secrets
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
			klog.FromContext(ctx).V(2).Info("Opening a watch again with a later token", "kind", key.kind, "object", klog.KRef(key.namespace, key.name))
			r.reopen(key)
		}
	}
}

// failingClient fails every call with err; kind, where set, is the
// client it stands for.
type failingClient[T, L any] struct {
	err  error
	kind any
}

// IsWatchListSemanticsUnSupported is kind's: the reflector asks once, at
// its start, whether it may stream its list.
func (c failingClient[T, L]) IsWatchListSemanticsUnSupported() bool {
	k, ok := c.kind.(interface{ IsWatchListSemanticsUnSupported() bool })
	return ok && k.IsWatchListSemanticsUnSupported()
}

func (c failingClient[T, L]) Get(context.Context, string, metav1.GetOptions) (T, error) {
	var none T
	return none, c.err
}

func (c failingClient[T, L]) List(context.Context, metav1.ListOptions) (L, error) {
	var none L
	return none, c.err
}

func (c failingClient[T, L]) Watch(context.Context, metav1.ListOptions) (watch.Interface, error) {
	return nil, c.err
}
