package inventory

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"

	"github.com/nodeagent-io/nodeagent/pkg/podrefs"
)

// FinishedPod is a pod that ran on a node and finished: when it arrived
// and when its last container ended, and what it referenced.
type FinishedPod struct {
	Namespace, Name, Node string
	Workload              string
	Refs                  podrefs.Refs
	// Started is when its first container started (FirstStartedAt).
	Created, Started, Ended time.Time
	// Unconverted are the volumes the admission webhook would make the
	// driver's, as PodInfo's: where a workload's pods come and go, what
	// moving it would move.
	Unconverted []UnconvertedVolume
}

// FinishedPodOf is what the inventory keeps of a finished pod p.
func FinishedPodOf(p *corev1.Pod) FinishedPod {
	return FinishedPod{
		Namespace: p.Namespace, Name: p.Name, Node: p.Spec.NodeName, Workload: WorkloadOf(p),
		Refs: podrefs.Of(p), Created: p.CreationTimestamp.Time, Started: FirstStartedAt(p), Ended: EndedAt(p), Unconverted: unconverted(p),
	}
}

// EndedAt is when p's last container ended, or zero where no container
// status says (a pod that failed before its containers started).
func EndedAt(p *corev1.Pod) time.Time {
	var last time.Time
	for _, statuses := range [][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
		for _, s := range statuses {
			if t := s.State.Terminated; t != nil && t.FinishedAt.After(last) {
				last = t.FinishedAt.Time
			}
		}
	}
	return last
}

// FirstStartedAt is when p's first container started, running or ended
// since (a container that restarted says its last start), or zero where
// none did: when the kubelet's first sync of p was done.
func FirstStartedAt(p *corev1.Pod) time.Time {
	var first time.Time
	for _, statuses := range [][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
		for _, s := range statuses {
			var started metav1.Time
			switch {
			case s.State.Running != nil:
				started = s.State.Running.StartedAt
			case s.State.Terminated != nil:
				started = s.State.Terminated.StartedAt
			}
			if !started.IsZero() && (first.IsZero() || started.Time.Before(first)) {
				first = started.Time
			}
		}
	}
	return first
}

// listFinished lists the pods that finished on the selected nodes (all
// nodes unless bySelector): one list, whose selector leaves the running
// ones to the server (a field selector has no "or" for the two phases, and
// a list per phase would make the apiserver read every pod twice more).
func (inv *Inventory) listFinished(ctx context.Context, client kubernetes.Interface, selected map[string]bool, bySelector bool, pageSize int64, progress Progress) error {
	opts := metav1.ListOptions{FieldSelector: "spec.nodeName!=,status.phase!=Pending,status.phase!=Running,status.phase!=Unknown"}
	return each(ctx, "finished pods", pageSize, progress, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return client.CoreV1().Pods("").List(ctx, o)
	}, func(obj runtime.Object) {
		p := obj.(*corev1.Pod)
		// The field selector's work is done again, where a server ignores it.
		finished := p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
		if p.Spec.NodeName == "" || !finished || (bySelector && !selected[p.Spec.NodeName]) {
			return
		}
		inv.Finished = append(inv.Finished, FinishedPodOf(p))
	}, opts)
}
