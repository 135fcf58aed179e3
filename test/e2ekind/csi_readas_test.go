//go:build e2e

package e2ekind

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeagent-io/nodeagent/test/e2eutil"
)

// csiReadAsPod upgrades the driver to read as the pods (csi.readAs=pod),
// through the real kubelet: its CSIDriver now asks the kubelets for each
// pod's token. A volume published before the upgrade keeps its content
// and gets updates again from its first publish with a token; a pod whose
// service account may read its ConfigMap gets it and its updates; one whose
// account may not stays ContainerCreating with the event that names the
// check to run; the driver's own account may read no ConfigMap.
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
	// now that the CSIDriver asks for one) brings a token, and the update.
	inContainer(t, ns, "before", "/mnt/cfg/k", "v2", 2*time.Minute+10*time.Second)
	refusedToPodAndDriver(t, ns, "nobody", "configmaps", "cfg")
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
