//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/nodeagent-io/nodeagent/internal/testutil"
	"github.com/nodeagent-io/nodeagent/pkg/webhook"
	"github.com/nodeagent-io/nodeagent/test/e2eutil"
)

// The admission webhook on the local control plane, as the apiserver calls
// it: it writes its own caBundle; a pod created in a namespace that opts in
// gets the driver's volumes, one in a namespace that does not, or a pod
// that opts out, or one whose service account may not read its ConfigMap
// (the driver reads as the pods), keeps its configMap volumes; and with the
// webhook killed, pods are still created, unconverted (failurePolicy
// Ignore).
func TestAdmissionWebhook(t *testing.T) {
	ctx := context.Background()
	own, optedIn, other := createNamespace(t, "webhook"), createNamespace(t, "webhook-in"), createNamespace(t, "webhook-out")
	label := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, webhook.ServeLabel, webhook.ServeEnabled)
	if _, err := clientset.CoreV1().Namespaces().Patch(ctx, optedIn, "application/merge-patch+json", []byte(label), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	// The pods' default account may read nginx; nobody may not.
	e2eutil.GrantReads(t, clientset, optedIn, "default", "configmaps", "nginx")
	if _, err := clientset.CoreV1().ServiceAccounts(optedIn).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "nobody"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	address := e2eutil.FreeLoopbackAddress(t)
	_, port, _ := strings.Cut(address, ":")
	config := createWebhookConfiguration(t, "https://localhost:"+port+"/convert")
	dir := t.TempDir()
	proc := startBare(t, "nodeagent-webhook", agentOnlyBinary(t), []string{"webhook", "--address=" + address, "--namespace=" + own,
		"--kubeconfig=" + cp.KubeconfigPath, "--webhook-configuration=" + config, "--dns-names=localhost", "-v=2"}, filepath.Join(dir, "webhook.log"))

	// The apiserver sees the caBundle the webhook writes within moments;
	// dry runs (the webhook has no side effects) until it converts.
	testutil.WaitFor(t, "the apiserver to call the webhook", func() bool {
		pod, err := createTestPod(ctx, optedIn, "", nil, true)
		return err == nil && pod.Annotations[webhook.ConvertedAnnotation] != ""
	})
	for _, tc := range []struct {
		name, namespace, serviceAccount string
		annotations                     map[string]string
		converted                       bool
	}{
		{"opted in", optedIn, "", nil, true},
		{"opted out", optedIn, "", map[string]string{webhook.ServeLabel: webhook.ServeDisabled}, false},
		{"not opted in", other, "", nil, false},
		{"may not read its ConfigMap", optedIn, "nobody", nil, false},
	} {
		pod, err := createTestPod(ctx, tc.namespace, tc.serviceAccount, tc.annotations, false)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		csi := pod.Spec.Volumes[0].CSI
		if converted := csi != nil && csi.VolumeAttributes["updates"] == "inPlace"; converted != tc.converted {
			t.Errorf("%s: volume %+v, want converted %v", tc.name, pod.Spec.Volumes[0], tc.converted)
		}
	}

	_ = proc.Signal(syscall.SIGKILL)
	proc.WaitExit(10 * time.Second)
	start := time.Now()
	pod, err := createTestPod(ctx, optedIn, "", nil, false)
	if err != nil || pod.Spec.Volumes[0].ConfigMap == nil {
		t.Fatalf("with the webhook down: %v, volumes %+v; want the pod created unconverted", err, pod)
	}
	t.Logf("with the webhook down, a pod was created unconverted in %s", time.Since(start).Round(time.Millisecond))
}

// createWebhookConfiguration makes a configuration like the chart's that
// calls url, and removes it when the test ends.
func createWebhookConfiguration(t *testing.T, url string) string {
	t.Helper()
	name := "nodeagent-webhook-e2e"
	configs := clientset.AdmissionregistrationV1().MutatingWebhookConfigurations()
	_, err := configs.Create(context.Background(), &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name: "pods.configmaps.nodeagent.io", AdmissionReviewVersions: []string{"v1"},
			SideEffects:    ptr.To(admissionregistrationv1.SideEffectClassNone),
			FailurePolicy:  ptr.To(admissionregistrationv1.Ignore),
			TimeoutSeconds: ptr.To[int32](3),
			ClientConfig:   admissionregistrationv1.WebhookClientConfig{URL: &url},
			Rules: []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}}},
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{webhook.ServeLabel: webhook.ServeEnabled}},
		}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = configs.Delete(context.Background(), name, metav1.DeleteOptions{}) })
	return name
}

// createTestPod creates (or, with dryRun, only admits) a pod of
// serviceAccount (empty: the default) whose configMap volume a container
// mounts in part, with subPath.
func createTestPod(ctx context.Context, namespace, serviceAccount string, annotations map[string]string, dryRun bool) (*corev1.Pod, error) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "web-", Annotations: annotations},
		Spec: corev1.PodSpec{
			ServiceAccountName: serviceAccount,
			Containers: []corev1.Container{{Name: "nginx", Image: "nginx", VolumeMounts: []corev1.VolumeMount{
				{Name: "conf", MountPath: "/etc/nginx/nginx.conf", SubPath: "nginx.conf"}}}},
			Volumes: []corev1.Volume{{Name: "conf", VolumeSource: corev1.VolumeSource{
				ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "nginx"}}}}},
		},
	}
	opts := metav1.CreateOptions{}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	return clientset.CoreV1().Pods(namespace).Create(ctx, pod, opts)
}
