package volumemanager

import (
	"errors"
	"fmt"
	"math"
	"path"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/nodeagent-io/nodeagent/pkg/volumemanager/atomicwriter"
)

// downwardAPIPayload computes the files of a projected volume's
// downwardAPI source, as the kubelet does (docs/kubelet-behaviour.md,
// "Projected volumes"): one file per item at its cleaned path, with the
// item's mode or the volume's default, holding a pod field or a
// container's resource. Items that cannot be computed are reported
// together; the others are still returned.
func downwardAPIPayload(items []corev1.DownwardAPIVolumeFile, pod *corev1.Pod, allocatable func() (corev1.ResourceList, error), mode int32) (map[string]atomicwriter.FileProjection, error) {
	var errs []error
	payload := map[string]atomicwriter.FileProjection{}
	for _, item := range items {
		file := atomicwriter.FileProjection{Mode: mode}
		if item.Mode != nil {
			file.Mode = *item.Mode
		}
		switch {
		case item.FieldRef != nil:
			value, err := podFieldValue(pod, item.FieldRef.FieldPath)
			if err != nil {
				errs = append(errs, err)
			}
			file.Data = []byte(value)
		case item.ResourceFieldRef != nil:
			var nodeAllocatable corev1.ResourceList
			var err error
			if allocatable != nil {
				nodeAllocatable, err = allocatable()
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("reading the node's allocatable resources: %w", err))
				break
			}
			value, err := containerResourceValue(item.ResourceFieldRef, pod, nodeAllocatable)
			if err != nil {
				errs = append(errs, err)
			}
			file.Data = []byte(value)
		}
		// A path that cleans to something invalid is left for the
		// writer's validation, which names it.
		payload[path.Clean(item.Path)] = file
	}
	return payload, errors.Join(errs...)
}

// podFieldValue returns the text of a pod field a downwardAPI volume may
// project: the pod's name, namespace or UID, all its labels or
// annotations (one key="quoted value" line each, sorted by key), or one
// label or annotation by key.
func podFieldValue(pod *corev1.Pod, fieldPath string) (string, error) {
	if open := strings.Index(fieldPath, "['"); open > 0 && strings.HasSuffix(fieldPath, "']") {
		field, key := fieldPath[:open], fieldPath[open+2:len(fieldPath)-2]
		switch field {
		case "metadata.annotations":
			if errs := validation.IsQualifiedName(strings.ToLower(key)); len(errs) > 0 {
				return "", fmt.Errorf("invalid key in %s: %s", fieldPath, strings.Join(errs, "; "))
			}
			return pod.Annotations[key], nil
		case "metadata.labels":
			if errs := validation.IsQualifiedName(key); len(errs) > 0 {
				return "", fmt.Errorf("invalid key in %s: %s", fieldPath, strings.Join(errs, "; "))
			}
			return pod.Labels[key], nil
		}
		return "", fmt.Errorf("fieldPath %q does not take a key", fieldPath)
	}
	switch fieldPath {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "metadata.labels":
		return formatMap(pod.Labels), nil
	case "metadata.annotations":
		return formatMap(pod.Annotations), nil
	}
	return "", fmt.Errorf("fieldPath %q is not supported in a downwardAPI volume", fieldPath)
}

// formatMap renders labels or annotations as the kubelet writes them.
func formatMap(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	lines := make([]string, 0, len(keys))
	for _, k := range keys {
		lines = append(lines, k+"="+strconv.Quote(m[k]))
	}
	return strings.Join(lines, "\n")
}

// containerResourceValue returns a container's request or limit in units of
// the selector's divisor, rounded up. A limit the container does not set
// (cpu, memory, ephemeral-storage) is the node's allocatable amount.
func containerResourceValue(sel *corev1.ResourceFieldSelector, pod *corev1.Pod, nodeAllocatable corev1.ResourceList) (string, error) {
	container := findContainer(pod, sel.ContainerName)
	if container == nil {
		return "", fmt.Errorf("container %q not found in the pod", sel.ContainerName)
	}
	limits := corev1.ResourceList{}
	for name, q := range container.Resources.Limits {
		limits[name] = q
	}
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage} {
		if q, ok := limits[name]; !ok || q.IsZero() {
			if q, ok := nodeAllocatable[name]; ok {
				limits[name] = q
			}
		}
	}
	divisor := resource.MustParse("1")
	if !sel.Divisor.IsZero() {
		divisor = sel.Divisor
	}
	kind, name, ok := strings.Cut(sel.Resource, ".")
	list := container.Resources.Requests
	if kind == "limits" {
		list = limits
	}
	resourceName := corev1.ResourceName(name)
	supported := resourceName == corev1.ResourceCPU || resourceName == corev1.ResourceMemory ||
		resourceName == corev1.ResourceEphemeralStorage || strings.HasPrefix(name, corev1.ResourceHugePagesPrefix)
	if !ok || (kind != "limits" && kind != "requests") || !supported {
		return "", fmt.Errorf("unsupported container resource %q", sel.Resource)
	}
	q := list[resourceName]
	if resourceName == corev1.ResourceCPU {
		return strconv.FormatInt(int64(math.Ceil(float64(q.MilliValue())/float64(divisor.MilliValue()))), 10), nil
	}
	return strconv.FormatInt(int64(math.Ceil(float64(q.Value())/float64(divisor.Value()))), 10), nil
}

// findContainer looks among the regular, then the init containers, as the
// kubelet does.
func findContainer(pod *corev1.Pod, name string) *corev1.Container {
	for _, list := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
	}
	return nil
}
