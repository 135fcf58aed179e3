// Package podconfig decides which pod updates from the API reach the pod
// workers, as the kubelet's pod config source decides it
// (docs/kubelet-behaviour.md, "Which updates sync a pod").
//
// Contract:
//   - A change of spec, labels, annotations, deletion timestamp or deletion
//     grace period is a Sync: the pod is synced at once.
//   - A change of status alone is a StatusOnly change: the kubelet updates
//     its copy of the pod and does not sync it. The one status change that
//     matters to the node agent is a pod reaching phase Succeeded or Failed,
//     which the kubelet knows first-hand and nodeagent learns from the API;
//     the caller tears such a pod down.
//   - Anything else (resourceVersion, managedFields, generation, owner
//     references, ...) is Ignored.
//   - The kubelet's own bookkeeping annotations (kubernetes.io/config.source,
//     config.mirror, config.seen) do not count as annotation changes.
package podconfig

import (
	"reflect"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
)

// Change is what an update means to the pod workers.
type Change int

const (
	// Ignored: nothing the kubelet acts on changed.
	Ignored Change = iota
	// StatusOnly: only the status changed.
	StatusOnly
	// Sync: the pod must be synced now.
	Sync
)

func (c Change) String() string {
	switch c {
	case Sync:
		return "sync"
	case StatusOnly:
		return "status-only"
	}
	return "ignored"
}

// Classify says what the update from old to updated means.
func Classify(old, updated *corev1.Pod) Change {
	if differSemantically(old, updated) {
		return Sync
	}
	if !equality.Semantic.DeepEqual(old.Status, updated.Status) {
		return StatusOnly
	}
	return Ignored
}

func differSemantically(a, b *corev1.Pod) bool {
	return !equality.Semantic.DeepEqual(a.Spec, b.Spec) ||
		!reflect.DeepEqual(a.Labels, b.Labels) ||
		!equality.Semantic.DeepEqual(a.DeletionTimestamp, b.DeletionTimestamp) ||
		!reflect.DeepEqual(a.DeletionGracePeriodSeconds, b.DeletionGracePeriodSeconds) ||
		!sameAnnotations(a.Annotations, b.Annotations)
}

// localAnnotations are written by the kubelet for its own bookkeeping.
var localAnnotations = map[string]bool{
	"kubernetes.io/config.source": true,
	corev1.MirrorPodAnnotationKey: true,
	"kubernetes.io/config.seen":   true,
}

// sameAnnotations compares annotations, leaving out the kubelet's own; a
// nil map equals an empty one.
func sameAnnotations(a, b map[string]string) bool {
	count := func(m map[string]string) int {
		n := 0
		for k := range m {
			if !localAnnotations[k] {
				n++
			}
		}
		return n
	}
	if count(a) != count(b) {
		return false
	}
	for k, v := range b {
		if localAnnotations[k] {
			continue
		}
		if old, ok := a[k]; !ok || old != v {
			return false
		}
	}
	return true
}
