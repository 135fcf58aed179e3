//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/nodeagent-io/nodeagent/internal/controlplane"
	"github.com/nodeagent-io/nodeagent/internal/testutil"

	"github.com/nodeagent-io/nodeagent/test/e2eutil"
)

// The driver reads as the pods on a real apiserver: its own service
// account may read no ConfigMap, a pod whose account may read its
// ConfigMap gets its files and every update (the watch opened with the
// pod's token), and one whose account may not is refused with the check
// to run.
func TestCSIReadsAsThePod(t *testing.T) {
	ctx := context.Background()
	ns := createNamespace(t, "csi-read-as")
	for _, sa := range []string{"driver", "reader", "nobody"} {
		if _, err := clientset.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	e2eutil.GrantConfigMapReads(t, clientset, ns, "reader")
	createConfigMap(t, ns, "cm-0", map[string]string{"config.yaml": "v1"})
	createConfigMap(t, ns, "cm-1", map[string]string{"config.yaml": "v1"})

	driver := startReadAsPodDriver(t, ns, "node-read-as", "-v=2")
	dir, node, driverConfig := driver.dir, driver.node, driver.config

	if err := publishVolume(node, dir, ns, 0, "reader", podTokens(t, ns, "reader")); err != nil {
		t.Fatalf("the reader's volume: %v", err)
	}
	file := filepath.Join(dir, "pods", "uid-0", "volumes", "kubernetes.io~csi", "cfg", "mount", "config.yaml")
	updateConfigMap(t, ns, "cm-0", "config.yaml", "v2")
	testutil.WaitFor(t, "the update in the reader's volume", func() bool { data, _ := os.ReadFile(file); return string(data) == "v2" })

	err := publishVolume(node, dir, ns, 1, "nobody", podTokens(t, ns, "nobody"))
	if status.Code(err) != codes.PermissionDenied || !strings.Contains(err.Error(), "kubectl auth can-i get configmaps/cm-1 -n "+ns+" --as=system:serviceaccount:"+ns+":nobody") {
		t.Errorf("the volume of a pod whose account may not read cm-1: %v, want PermissionDenied with the check to run", err)
	}
	if _, err := kubernetes.NewForConfigOrDie(driverConfig).CoreV1().ConfigMaps(ns).Get(ctx, "cm-0", metav1.GetOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the driver's own account reading cm-0: %v, want Forbidden", err)
	}
}

// readAsPodDriver is the image's driver reading as the pods, started by
// startReadAsPodDriver on a directory of its own (its socket, records,
// log, and the pods' volumes publishVolume makes), with the account
// "driver" of its namespace: node is its CSI node service, config its own
// account's client configuration.
type readAsPodDriver struct {
	dir    string
	proc   *controlplane.Process
	node   csi.NodeClient
	config *rest.Config
}

// startReadAsPodDriver starts `nodeagent-agent csi --read-as=pod` as node
// nodeName with the token of service account "driver" of ns (which the
// caller makes) and args besides, and waits for its socket. It stops when
// the test ends.
func startReadAsPodDriver(t *testing.T, ns, nodeName string, args ...string) readAsPodDriver {
	t.Helper()
	dir, err := os.MkdirTemp("", "csi") // short: a socket path has at most 107 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	kubeconfig, config := tokenKubeconfig(t, cp, ns, "driver")
	socket := filepath.Join(dir, "csi.sock")
	proc := startBare(t, "nodeagent-csi", agentOnlyBinary(t), append([]string{"csi", "--kubeconfig=" + kubeconfig, "--node-name=" + nodeName,
		"--endpoint=" + socket, "--state-dir=" + filepath.Join(dir, "state"), "--register=false", "--http-address=", "--read-as=pod"}, args...),
		filepath.Join(dir, "csi.log"))
	testutil.WaitFor(t, "the driver's socket", func() bool { _, err := os.Stat(socket); return err == nil })
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return readAsPodDriver{dir: dir, proc: proc, node: csi.NewNodeClient(conn), config: config}
}

// podTokens is the volume context's tokens attribute as the kubelet fills
// it for a CSIDriver whose tokenRequests name no audience: a token of
// service account sa for the apiserver.
func podTokens(t *testing.T, ns, sa string) map[string]string {
	t.Helper()
	tr, err := clientset.CoreV1().ServiceAccounts(ns).CreateToken(context.Background(), sa,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: new(int64(3600))}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(map[string]authenticationv1.TokenRequestStatus{"": tr.Status})
	if err != nil {
		t.Fatal(err)
	}
	return map[string]string{"csi.storage.k8s.io/serviceAccount.tokens": string(raw)}
}
