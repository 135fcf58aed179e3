//go:build e2e

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodeagent-io/nodeagent/internal/testutil"
	"github.com/nodeagent-io/nodeagent/test/e2eutil"
)

// The csi overlay, applied for real: its CSIDriver object as the kubelet
// needs it, the hardened DaemonSet, and the driver run with the container's
// exact arguments (the paths a test cannot use moved) and the
// ServiceAccount's own token serves a volume published as the kubelet
// publishes it, read with its pod's token; that identity reads nothing,
// ConfigMaps included.
func TestDeployCSIOverlay(t *testing.T) {
	objects := applyManifests(t, cp, kustomizeBuild(t, "overlays/csi"))
	ds := daemonSetOf(t, objects)
	checkHardening(t, ds)
	driver, err := clientset.StorageV1().CSIDrivers().Get(context.Background(), "configmaps.nodeagent.io", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s := driver.Spec; s.AttachRequired == nil || *s.AttachRequired || s.PodInfoOnMount == nil || !*s.PodInfoOnMount ||
		len(s.VolumeLifecycleModes) != 1 || s.VolumeLifecycleModes[0] != "Ephemeral" || s.FSGroupPolicy == nil || *s.FSGroupPolicy != "File" ||
		len(s.TokenRequests) != 1 || s.TokenRequests[0].Audience != "" || s.RequiresRepublish == nil || !*s.RequiresRepublish ||
		s.ServiceAccountTokenInSecrets == nil || !*s.ServiceAccountTokenInSecrets {
		t.Errorf("CSIDriver spec %+v", s)
	}
	kubeconfig, saClient := serviceAccountClient(t, cp)
	ns := createNamespace(t, "deploy-csi")
	createConfigMap(t, ns, "cm-0", map[string]string{"config.yaml": "csi"})

	dir, err := os.MkdirTemp("", "csi") // a socket's path has at most 107 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	// The pods' tokens on this machine's tmpfs, where the overlay keeps
	// them on the node's.
	tokens, err := os.MkdirTemp("/dev/shm", "deploy-csi-tokens")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tokens) })
	args := []string{"csi", "--kubeconfig=" + kubeconfig, "--node-name=node-deploy-csi", "--kubelet-root-dir=" + dir,
		"--state-dir=" + filepath.Join(dir, "state"), "--http-address=", "--register=false", "--token-dir=" + tokens}
	moved := []string{"--state-dir=", "--kubelet-root-dir=", "--http-address=", "--token-dir="}
	for _, arg := range ds.Spec.Template.Spec.Containers[0].Args[1:] { // [0] is "csi"
		if !slices.ContainsFunc(moved, func(flag string) bool { return strings.HasPrefix(arg, flag) }) {
			args = append(args, arg)
		}
	}
	if !slices.Contains(ds.Spec.Template.Spec.Containers[0].Args, "--token-dir=/run/nodeagent/csi-tokens") {
		t.Errorf("the overlay's driver keeps no token for its restarts: %v", ds.Spec.Template.Spec.Containers[0].Args)
	}
	startBare(t, "nodeagent-csi", agentOnlyBinary(t), args, filepath.Join(dir, "csi.log"))
	socket := filepath.Join(dir, "plugins", "configmaps.nodeagent.io", "csi.sock")
	testutil.WaitFor(t, "the driver's socket", func() bool { _, err := os.Stat(socket); return err == nil })
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// The overlay's driver reads as the pods: the pod's account may read
	// cm-0, and the publish call carries its token, as the kubelet's does.
	if _, err := clientset.CoreV1().ServiceAccounts(ns).Create(context.Background(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "app"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e2eutil.GrantReads(t, clientset, ns, "app", "configmaps", "cm-0")
	if err := publishVolume(csi.NewNodeClient(conn), dir, ns, 0, "app", podTokens(t, ns, "app")); err != nil {
		t.Fatalf("publishing the volume as its pod: %v", err)
	}
	file := filepath.Join(dir, "pods", "uid-0", "volumes", "kubernetes.io~csi", "cfg", "mount", "config.yaml")
	if data, err := os.ReadFile(file); err != nil || string(data) != "csi" {
		t.Errorf("the published volume's file: %q, %v", data, err)
	}
	if kept, err := os.ReadDir(tokens); err != nil || len(kept) != 1 {
		t.Errorf("tokens kept for a restart: %v (%v), want the volume's", kept, err)
	}

	ctx := context.Background()
	attempts := map[string]error{}
	_, attempts["list pods"] = saClient.CoreV1().Pods("").List(ctx, metav1.ListOptions{Limit: 1})
	_, attempts["list nodes"] = saClient.CoreV1().Nodes().List(ctx, metav1.ListOptions{Limit: 1})
	_, attempts["list secrets"] = saClient.CoreV1().Secrets("kube-system").List(ctx, metav1.ListOptions{})
	_, attempts["get configmaps"] = saClient.CoreV1().ConfigMaps(ns).Get(ctx, "cm-0", metav1.GetOptions{})
	_, attempts["patch configmaps"] = saClient.CoreV1().ConfigMaps(ns).Patch(ctx, "cm-0", types.MergePatchType, []byte(`{"data":{"x":"y"}}`), metav1.PatchOptions{})
	for what, err := range attempts {
		if !apierrors.IsForbidden(err) {
			t.Errorf("the csi overlay's identity: %s: got %v, want Forbidden", what, err)
		}
	}
}
