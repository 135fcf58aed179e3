//go:build e2e

package e2ekind

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodeagent-io/nodeagent/internal/testutil"
	"github.com/nodeagent-io/nodeagent/internal/volumetree"
	"github.com/nodeagent-io/nodeagent/pkg/podrefs"
)

// The two writers of a pod's volumes on a node.
const (
	agentRoot   = "/var/lib/nodeagent"
	kubeletRoot = "/var/lib/kubelet"
)

// nodeExec runs a command on a kind node (a Docker container named as
// the node) and returns its standard output.
func nodeExec(node string, args ...string) ([]byte, error) {
	cmd := exec.Command("docker", append([]string{"exec", node}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("docker exec %s %s: %v: %s", node, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// volumeDir is where root's writer keeps a pod's volume; plugin is
// configmap or projected.
func volumeDir(root string, uid types.UID, plugin, volume string) string {
	return podrefs.VolumeDir(root, string(uid), podrefs.Plugin("kubernetes.io~"+plugin), volume)
}

// readTree reads a volume directory on a node (internal/volumetree). A
// missing directory is an error.
func readTree(node, dir string) (volumetree.Tree, error) {
	out, err := nodeExec(node, "tar", "-C", dir, "-cf", "-", ".")
	if err != nil {
		return nil, err
	}
	return volumetree.FromTar(bytes.NewReader(out))
}

// readFile reads one file on a node.
func readFile(node, file string) (string, error) {
	out, err := nodeExec(node, "cat", file)
	return string(out), err
}

// exists reports whether a path exists on a node.
func exists(node, p string) bool {
	_, err := nodeExec(node, "test", "-e", p)
	return err == nil
}

// eventually is testutil.Eventually, every second, for a condition that
// says what is still wrong ("" once it holds) rather than an error.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() string) {
	t.Helper()
	testutil.Eventually(t, time.Second, timeout, func() error {
		if reason := cond(); reason != "" {
			return fmt.Errorf("%s: %s", what, reason)
		}
		return nil
	})
}

// clusterNodes lists the cluster's nodes by name.
func clusterNodes(t *testing.T) []string {
	t.Helper()
	list, err := clientset.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, n := range list.Items {
		names = append(names, n.Name)
	}
	sort.Strings(names)
	if len(names) != 3 {
		t.Fatalf("the kind cluster has %d nodes, want 3 (deploy/kind/cluster.yaml)", len(names))
	}
	return names
}

// testNamespace creates a namespace that the test deletes at its end.
func testNamespace(t *testing.T, prefix string) string {
	t.Helper()
	ns, err := clientset.CoreV1().Namespaces().Create(context.Background(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = clientset.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{})
	})
	return ns.Name
}
