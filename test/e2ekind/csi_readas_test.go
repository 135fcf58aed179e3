//go:build e2e

package e2ekind

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/nodeagent-io/nodeagent/pkg/podrefs"
	"github.com/nodeagent-io/nodeagent/test/e2eutil"
)

// csiReadAsPod upgrades the driver to read as the pods (csi.readAs=pod),
// through the real kubelet: its CSIDriver now asks the kubelets for each
// pod's token. A volume published before the upgrade keeps its content
// and gets updates again from its first publish with a token; a pod whose
// service account may read its ConfigMap gets it and its updates; one whose
// account may not stays ContainerCreating with the event that names the
// check to run; the driver's own account may read no ConfigMap; and the
// webhook converts only what a pod may read.
func csiReadAsPod(t *testing.T) {
	ctx := context.Background()
	ns := testNamespace(t, "e2e-kind-csi-read-as")
	t.Cleanup(func() { deletePods(t, ns) })
	mustCreate(t, ns, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg"}, Data: map[string]string{"k": "v1"}})
	e2eutil.GrantConfigMapReads(t, clientset, ns, "reader")
	workers := clusterNodes(t)[1:]
	podOf := func(name, sa, node string) {
		t.Helper()
		if _, err := clientset.CoreV1().ServiceAccounts(ns).Get(ctx, sa, metav1.GetOptions{}); err != nil {
			if _, err := clientset.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		pod := csiPod(name, node, map[string]map[string]string{"cfg": {"configMap": "cfg"}})
		pod.Spec.ServiceAccountName = sa
		mustCreate(t, ns, pod)
	}
	// Published by the driver reading as itself, before the upgrade, on a
	// node of its own: no other volume there brings a token for cfg.
	podOf("before", "reader", workers[1])
	inContainer(t, ns, "before", "/mnt/cfg/k", "v1", time.Minute)

	helm(t, "upgrade", csiRelease, "deploy/helm/nodeagent", "--namespace", csiNamespace, "--reuse-values", "--set", "csi.readAs=pod")
	waitCSIRollout(t, "the driver rolled out, reading as the pods")
	podOf("reader", "reader", workers[0])
	podOf("nobody", "nobody", workers[0])
	inContainer(t, ns, "reader", "/mnt/cfg/k", "v1", time.Minute)
	cm, err := clientset.CoreV1().ConfigMaps(ns).Get(ctx, "cfg", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data["k"] = "v2"
	if _, err := clientset.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	inContainer(t, ns, "reader", "/mnt/cfg/k", "v2", 10*time.Second)
	// The volume published before the upgrade, with no token, kept its
	// content; the kubelet's next publish of it (at its pod's next sync,
	// up to 1.5 sync periods with the pod workers' jitter, now that the
	// CSIDriver asks for one) brings a token, and the update. A publish the
	// kubelet tried while the driver rolled out failed and is retried at
	// its backoff's pace: bounded at 3.5 minutes, as a make test run took
	// more than 2m10s once.
	inContainer(t, ns, "before", "/mnt/cfg/k", "v2", 3*time.Minute+30*time.Second)
	refusedToPodAndDriver(t, ns, "nobody", "configmaps", "cfg")
	webhookAsThePods(t, ns, workers[0])
}

// webhookAsThePods: with the driver reading as the pods, the webhook moves a
// pod's configMap volume only where the pod's service account may read its
// ConfigMap: reader's becomes the driver's, nobody's stays with the
// kubelet, and both pods run with the ConfigMap's content.
func webhookAsThePods(t *testing.T, ns, node string) {
	ctx := context.Background()
	waitWebhookRollout(t)
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, podrefs.ServeLabel, podrefs.ServeEnabled)
	if _, err := clientset.CoreV1().Namespaces().Patch(ctx, ns, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, sa := range []string{"reader", "nobody"} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "webhook-" + sa},
			Spec: corev1.PodSpec{NodeName: node, ServiceAccountName: sa, TerminationGracePeriodSeconds: ptr.To[int64](1),
				Containers: []corev1.Container{{Name: "app", Image: podImage, VolumeMounts: []corev1.VolumeMount{{Name: "cfg", MountPath: "/mnt/cfg"}}}},
				Volumes: []corev1.Volume{{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
					LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}}}}}
		mustCreate(t, ns, pod)
	}
	for sa, wantDriver := range map[string]bool{"reader": true, "nobody": false} {
		pod := waitRunning(t, ns, "webhook-"+sa)
		if driver := pod.Spec.Volumes[0].CSI != nil; driver != wantDriver {
			t.Errorf("%s's volume is the driver's: %v, want %v (annotations %v)", pod.Name, driver, wantDriver, pod.Annotations)
		}
		inContainer(t, ns, pod.Name, "/mnt/cfg/k", "v2", time.Minute)
	}
}

// waitWebhookRollout waits until the webhook's Deployment runs its latest
// generation alone, every replica ready.
func waitWebhookRollout(t *testing.T) {
	t.Helper()
	eventually(t, 3*time.Minute, "the webhook rolled out", func() string {
		d, err := clientset.AppsV1().Deployments(csiNamespace).Get(context.Background(), webhookName, metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		want := ptr.Deref(d.Spec.Replicas, 1)
		if s := d.Status; s.ObservedGeneration < d.Generation || s.UpdatedReplicas != want || s.Replicas != want || s.ReadyReplicas != want {
			return fmt.Sprintf("%d of %d updated, %d in all, %d ready", s.UpdatedReplicas, want, s.Replicas, s.ReadyReplicas)
		}
		return ""
	})
}

// waitCSIRollout waits until the driver's DaemonSet runs its latest
// generation on every node.
func waitCSIRollout(t *testing.T, what string) {
	t.Helper()
	eventually(t, 3*time.Minute, what, func() string {
		ds, err := clientset.AppsV1().DaemonSets(csiNamespace).Get(context.Background(), csiRelease, metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		if s := ds.Status; s.ObservedGeneration < ds.Generation || s.UpdatedNumberScheduled != 3 || s.NumberReady != 3 || s.NumberUnavailable != 0 {
			return fmt.Sprintf("%d of 3 updated, %d ready", s.UpdatedNumberScheduled, s.NumberReady)
		}
		return ""
	})
}
