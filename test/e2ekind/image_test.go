//go:build e2e

package e2ekind

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// checkAgentsRun fails unless every agent of ds runs exactly image: the
// template and each pod name it, containerd ran it (one image ID on every
// node), and each agent reports the version in image's tag, which is the
// version `nodeagent version` of that build prints.
func checkAgentsRun(t *testing.T, ds *appsv1.DaemonSet, image string) {
	t.Helper()
	if got := ds.Spec.Template.Spec.Containers[0].Image; got != image {
		t.Errorf("the DaemonSet's template runs %q, want %q (the image make image built)", got, image)
	}
	ctx := context.Background()
	selector := metav1.FormatLabelSelector(ds.Spec.Selector)
	pods, err := clientset.CoreV1().Pods(ds.Namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatal(err)
	}
	version := image[strings.LastIndex(image, ":")+1:]
	imageIDs := map[string]bool{}
	for _, pod := range pods.Items {
		if got := pod.Spec.Containers[0].Image; got != image {
			t.Errorf("agent %s runs %q, want %q", pod.Name, got, image)
		}
		for _, status := range pod.Status.ContainerStatuses {
			// containerd reports a short name fully qualified.
			if status.Image != image && status.Image != "docker.io/library/"+image {
				t.Errorf("agent %s: containerd ran %q, want %q", pod.Name, status.Image, image)
			}
			imageIDs[status.ImageID] = true
		}
		checkAgentVersion(t, pod, version)
	}
	if len(imageIDs) != 1 {
		t.Errorf("the agents run %d different image IDs, want one: %v", len(imageIDs), imageIDs)
	}
}

// checkAgentVersion fails unless the agent of pod reports version in its
// nodeagent_info, read through the apiserver's pod proxy.
func checkAgentVersion(t *testing.T, pod corev1.Pod, version string) {
	t.Helper()
	metrics, err := clientset.CoreV1().Pods(pod.Namespace).ProxyGet("http", pod.Name, "10356", "metrics", nil).DoRaw(context.Background())
	if err != nil {
		t.Errorf("agent %s: reading its metrics through the apiserver's pod proxy: %v", pod.Name, err)
		return
	}
	if !strings.Contains(string(metrics), `version="`+version+`"`) {
		t.Errorf("agent %s: nodeagent_info does not report version %q, the image's tag", pod.Name, version)
	}
}
