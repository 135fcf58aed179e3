package agent

import (
	"context"
	"errors"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/nodeagent-io/nodeagent/pkg/model"
	"github.com/nodeagent-io/nodeagent/pkg/podrefs"
)

// envReader reads the ConfigMaps of containers' environments the way the
// kubelet does: when it starts a container, that is at the pod's first sync
// for the pod's containers, at the first sync that sees an ephemeral
// container added later, again at each sync until the read succeeds, and
// never in steady state. The reads go through the ConfigMap manager, so they
// count like the kubelet's (one GET, or one watch with the watch strategy).
type envReader struct {
	get func(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error)

	mu sync.Mutex
	// started holds, per pod, the containers whose environment was read.
	started map[types.UID]sets.Set[string]
}

func newEnvReader(get func(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error)) *envReader {
	return &envReader{get: get, started: map[types.UID]sets.Set[string]{}}
}

// read reads the env ConfigMaps of the pod's containers that no earlier
// sync read. A missing ConfigMap or key that the container does not mark
// optional is an error, as it keeps the kubelet from starting the container.
func (r *envReader) read(ctx context.Context, pod *corev1.Pod) error {
	r.mu.Lock()
	started := r.started[pod.UID].Clone()
	r.mu.Unlock()
	var errs []error
	podrefs.VisitContainers(pod, func(c *corev1.Container) {
		if started.Has(c.Name) {
			return
		}
		var containerErrs []error
		for name, refs := range envReferences(c) {
			if err := r.check(ctx, pod.Namespace, name, refs); err != nil {
				containerErrs = append(containerErrs, err)
			}
		}
		if len(containerErrs) == 0 {
			started.Insert(c.Name)
		}
		errs = append(errs, containerErrs...)
	})
	r.mu.Lock()
	r.started[pod.UID] = started
	r.mu.Unlock()
	return errors.Join(errs...)
}

// check reads one ConfigMap and checks what the container needs of it.
func (r *envReader) check(ctx context.Context, namespace, name string, refs *envRefs) error {
	cm, err := r.get(ctx, namespace, name)
	switch {
	case apierrors.IsNotFound(err):
		if refs.required() {
			return fmt.Errorf("configmap %q not found", name)
		}
		return nil
	case err != nil:
		return fmt.Errorf("reading configmap %q: %w", name, err)
	}
	for key, optional := range refs.keys {
		if _, ok := cm.Data[key]; !ok && !optional {
			return fmt.Errorf("couldn't find key %s in ConfigMap %s/%s", key, namespace, name)
		}
	}
	return nil
}

// forget drops a torn-down pod.
func (r *envReader) forget(uid types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.started, uid)
}

// envRefs are one ConfigMap's references from a container's environment.
type envRefs struct {
	// wholeRequired is set by an envFrom that is not optional.
	wholeRequired bool
	// keys are the configMapKeyRef keys, each optional or not.
	keys map[string]bool
}

func (r *envRefs) required() bool {
	if r.wholeRequired {
		return true
	}
	for _, optional := range r.keys {
		if !optional {
			return true
		}
	}
	return false
}

// envReferences groups the ConfigMaps of c's environment (podrefs.EnvRefs)
// by name. A key named twice is optional only if both say so.
func envReferences(c *corev1.Container) map[string]*envRefs {
	refs := map[string]*envRefs{}
	for _, r := range podrefs.EnvRefs(c) {
		if r.Kind != model.ConfigMap {
			continue
		}
		e := refs[r.Name]
		if e == nil {
			e = &envRefs{keys: map[string]bool{}}
			refs[r.Name] = e
		}
		if len(r.Keys) == 0 {
			e.wholeRequired = e.wholeRequired || !r.Optional
			continue
		}
		for _, key := range r.Keys {
			optional := r.Optional
			if prev, seen := e.keys[key]; seen {
				optional = optional && prev
			}
			e.keys[key] = optional
		}
	}
	return refs
}
