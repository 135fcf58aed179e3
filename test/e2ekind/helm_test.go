//go:build e2e

package e2ekind

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// The chart's release runs beside the kustomize DaemonSet of
// deploy/overlays/kind, with a root directory of its own on every node.
const (
	helmRelease   = "nodeagent-helm"
	helmNamespace = "nodeagent-helm"
	helmRoot      = "/var/lib/nodeagent-helm"
)

// helm runs the pinned helm CLI (make helm) on the kind cluster.
func helm(t *testing.T, args ...string) string {
	t.Helper()
	bin := os.Getenv("NODEAGENT_HELM_BIN")
	if bin == "" {
		t.Fatal("NODEAGENT_HELM_BIN is not set; run through `make e2e-kind`, which builds helm")
	}
	cmd := exec.Command(bin, append(args, "--kubeconfig", kubeconfigPath)...)
	cmd.Dir = filepath.Join("..", "..")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// helmAgents waits until the release's DaemonSet runs its template on
// every node, and returns its agents' arguments.
func helmAgents(t *testing.T) []string {
	t.Helper()
	var args []string
	eventually(t, 3*time.Minute, "the release's agents updated and ready on every node", func() string {
		ds, err := clientset.AppsV1().DaemonSets(helmNamespace).Get(context.Background(), helmRelease, metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		s := ds.Status
		if s.ObservedGeneration < ds.Generation || s.UpdatedNumberScheduled != 3 || s.NumberReady != 3 || s.NumberAvailable != 3 {
			return fmt.Sprintf("rollout in progress: %d updated, %d ready of %d", s.UpdatedNumberScheduled, s.NumberReady, s.DesiredNumberScheduled)
		}
		args = ds.Spec.Template.Spec.Containers[0].Args
		return ""
	})
	return args
}

// TestHelmInstallAndUpgrade installs the chart as an operator would, in
// the before mode, with the image make image built; its agents put a real
// pod's ConfigMap on disk; an upgrade to the after mode replaces every
// agent, and the new agents keep the volume; the uninstall removes it all.
func TestHelmInstallAndUpgrade(t *testing.T) {
	t.Parallel() // touches no kubelet: runs beside TestCSIDriver, TestRealPodVolumes and TestHelmInstallAndUpgrade, after the tests that restart kubelets
	ctx := context.Background()
	t.Cleanup(func() {
		_ = exec.Command(os.Getenv("NODEAGENT_HELM_BIN"), "uninstall", helmRelease, "-n", helmNamespace, "--wait",
			"--kubeconfig", kubeconfigPath).Run()
		// Gone before the next test measures the kind nodes' GETs.
		eventually(t, 2*time.Minute, "the release's agents gone", func() string {
			pods, err := clientset.CoreV1().Pods(helmNamespace).List(ctx, metav1.ListOptions{})
			if err != nil {
				return err.Error()
			}
			if n := len(pods.Items); n > 0 {
				return fmt.Sprintf("%d pods left", n)
			}
			return ""
		})
		_ = clientset.CoreV1().Namespaces().Delete(ctx, helmNamespace, metav1.DeleteOptions{})
	})
	// As docs/deploy.md says: the namespace made labelled first (the chart
	// refuses one that --create-namespace would make).
	_, err := clientset.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: helmNamespace,
		Labels: map[string]string{"pod-security.kubernetes.io/enforce": "privileged"}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	helm(t, "install", helmRelease, "deploy/helm/nodeagent", "-n", helmNamespace,
		"--set", "mode=before", "--set", "image.repository="+agentImage[:strings.LastIndex(agentImage, ":")], "--set", "image.tag="+agentImage[strings.LastIndex(agentImage, ":")+1:],
		"--set", "image.pullPolicy=Never", "--set", "rootDir="+helmRoot, "--wait", "--timeout", "3m")
	if args := helmAgents(t); !slices.Contains(args, "--cache-invalidation=every-sync") || !slices.Contains(args, "--root-dir="+helmRoot) {
		t.Fatalf("mode=before: agents run with %q", args)
	}

	nodes := clusterNodes(t)
	ns := testNamespace(t, "e2e-kind-helm")
	if _, err := clientset.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app"},
		Data: map[string]string{"greeting": "hello"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod, err := clientset.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "helm-probe"},
		Spec: corev1.PodSpec{NodeName: nodes[1], TerminationGracePeriodSeconds: ptr.To[int64](1),
			Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			Volumes: []corev1.Volume{{Name: "app", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: "app"}}}}},
			Containers: []corev1.Container{{Name: "pause", Image: podImage,
				VolumeMounts: []corev1.VolumeMount{{Name: "app", MountPath: "/app"}}}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(volumeDir(helmRoot, pod.UID, "configmap", "app"), "greeting")
	onDisk := func() string {
		got, err := readFile(nodes[1], file)
		if err != nil {
			return err.Error()
		}
		if got != "hello" {
			return "greeting is " + got
		}
		return ""
	}
	eventually(t, 90*time.Second, "the release's agent writes the pod's ConfigMap", onDisk)

	helm(t, "upgrade", helmRelease, "deploy/helm/nodeagent", "-n", helmNamespace, "--reuse-values",
		"--set", "mode=after", "--wait", "--timeout", "3m")
	if args := helmAgents(t); !slices.Contains(args, "--cache-invalidation=first-reference") {
		t.Fatalf("mode=after: agents run with %q", args)
	}
	if out := helm(t, "get", "values", helmRelease, "-n", helmNamespace); !strings.Contains(out, "mode: after") {
		t.Errorf("helm get values after the upgrade:\n%s", out)
	}
	eventually(t, 90*time.Second, "the upgraded agent keeps the pod's ConfigMap", onDisk)
}

// TestChartChecksPodSecurity: installed into a namespace that enforces the
// baseline Pod Security level, which refuses the agents' hostPath volumes,
// the chart fails with the command that labels the namespace; labelled
// privileged, it installs; into a namespace that does not exist
// (--create-namespace) it fails with the commands that make it labelled,
// unless told the cluster's default is privileged (each a server-side dry
// run).
func TestChartChecksPodSecurity(t *testing.T) {
	t.Parallel() // touches no kubelet and installs nothing (the after mode: no CSIDriver, which TestCSIDriver's release owns)
	ns := testNamespace(t, "e2e-kind-pod-security")
	label := func(level string) {
		if err := patchLabel(clientset.CoreV1().Namespaces(), ns, "pod-security.kubernetes.io/enforce", level); err != nil {
			t.Fatal(err)
		}
	}
	install := func(ns string, args ...string) (string, error) {
		repo, tag, _ := strings.Cut(agentImage, ":")
		cmd := exec.Command(os.Getenv("NODEAGENT_HELM_BIN"), append([]string{"install", "pod-security", "deploy/helm/nodeagent", "--namespace", ns,
			"--set", "mode=after", "--set", "image.repository=" + repo, "--set", "image.tag=" + tag, "--dry-run=server", "--kubeconfig", kubeconfigPath}, args...)...)
		cmd.Dir = filepath.Join("..", "..")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	label("baseline")
	want := "kubectl label namespace " + ns + " pod-security.kubernetes.io/enforce=privileged --overwrite"
	if out, err := install(ns); err == nil || !strings.Contains(out, want) {
		t.Errorf("into a baseline namespace: err %v, output %s; want a failure that says %q", err, out, want)
	}
	label("privileged")
	if out, err := install(ns); err != nil {
		t.Errorf("into a privileged namespace: %v\n%s", err, out)
	}
	absent := ns + "-absent"
	want = "kubectl create namespace " + absent + " && kubectl label namespace " + absent + " pod-security.kubernetes.io/enforce=privileged"
	if out, err := install(absent, "--create-namespace"); err == nil || !strings.Contains(out, want) {
		t.Errorf("into a namespace --create-namespace would make: err %v, output %s; want a failure that says %q", err, out, want)
	}
	if out, err := install(absent, "--create-namespace", "--set", "podSecurity.checkNewNamespace=false"); err != nil {
		t.Errorf("into a namespace --create-namespace would make, podSecurity.checkNewNamespace=false: %v\n%s", err, out)
	}
}
