// Package driverpods finds the pods that still need a CSI driver: those
// holding an inline volume of it that the kubelet has not torn down. Removing
// the driver strands them, since the kubelet cannot unpublish a volume
// without its driver, and such a pod never finishes stopping. Check is what
// an uninstall asks first.
package driverpods

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/pager"
)

// PodLister lists pods one page at a time, as coreclient's and client-go's
// pod clients do for the namespace "" (every namespace).
type PodLister interface {
	List(ctx context.Context, opts metav1.ListOptions) (*corev1.PodList, error)
}

// Pod is a pod that needs the driver.
type Pod struct {
	Namespace, Name, Node string
	// Terminating is a pod being deleted: its volumes are unpublished as
	// it stops, which is when it needs the driver most.
	Terminating bool
}

func (p Pod) String() string {
	s := p.Namespace + "/" + p.Name
	if p.Node != "" {
		s += " on node " + p.Node
	}
	if p.Terminating {
		s += " (terminating)"
	}
	return s
}

// Using lists the pods that hold a volume of driver and may still need it:
// every pod with such a volume except those that have finished (phase
// Succeeded or Failed) and are not being deleted, whose volumes the kubelet
// tears down as they finish, while the driver is still there.
func Using(ctx context.Context, pods PodLister, driver string) ([]Pod, error) {
	list := pager.New(pager.SimplePageFunc(func(opts metav1.ListOptions) (runtime.Object, error) {
		return pods.List(ctx, opts)
	}))
	var using []Pod
	err := list.EachListItemWithAlloc(ctx, metav1.ListOptions{}, func(obj runtime.Object) error {
		pod, ok := obj.(*corev1.Pod)
		if !ok {
			return fmt.Errorf("listing pods: got a %T", obj)
		}
		if needsDriver(pod, driver) {
			using = append(using, Pod{Namespace: pod.Namespace, Name: pod.Name, Node: pod.Spec.NodeName,
				Terminating: pod.DeletionTimestamp != nil})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing the pods that use the CSI driver %s: %w", driver, err)
	}
	return using, nil
}

func needsDriver(pod *corev1.Pod, driver string) bool {
	finished := pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
	if finished && pod.DeletionTimestamp == nil {
		return false
	}
	for _, v := range pod.Spec.Volumes {
		if v.CSI != nil && v.CSI.Driver == driver {
			return true
		}
	}
	return false
}

// Check returns nil when no pod needs driver, and an *InUseError naming
// them otherwise.
func Check(ctx context.Context, pods PodLister, driver string) error {
	using, err := Using(ctx, pods, driver)
	if err != nil {
		return err
	}
	if len(using) > 0 {
		return &InUseError{Driver: driver, Pods: using}
	}
	return nil
}

// InUseError says which pods still need the driver, and what to do.
type InUseError struct {
	Driver string
	Pods   []Pod
}

// named is how many pods the message lists; the command it ends with lists
// them all.
const named = 20

func (e *InUseError) Error() string {
	var b strings.Builder
	counted := fmt.Sprintf("%d pods use", len(e.Pods))
	if len(e.Pods) == 1 {
		counted = "1 pod uses"
	}
	fmt.Fprintf(&b, "%s the CSI driver %s, and uninstalling it now would leave them unable to stop "+
		"(the kubelet needs the driver to unpublish their volumes):\n", counted, e.Driver)
	for i, p := range e.Pods {
		if i == named {
			fmt.Fprintf(&b, "  and %d more\n", len(e.Pods)-named)
			break
		}
		fmt.Fprintf(&b, "  %s\n", p)
	}
	fmt.Fprintf(&b, "Move their workloads back to configMap volumes first (docs/deploy.md, \"Uninstalling\": "+
		"nodeagent convert --revert, or a rollout restart once the webhook is gone), then uninstall again. "+
		"This lists the pods that still use the driver:\n  %s", ListCommand(e.Driver))
	return b.String()
}

// ListCommand is a kubectl command that lists the pods Using finds, for a
// user with kubectl and jq alone.
func ListCommand(driver string) string {
	return `kubectl get pods -A -o json | jq -r '.items[] | select(any(.spec.volumes[]?; .csi.driver == "` + driver + `")` +
		` and (.metadata.deletionTimestamp or (.status.phase | IN("Succeeded", "Failed") | not)))` +
		` | .metadata.namespace + "/" + .metadata.name'`
}
