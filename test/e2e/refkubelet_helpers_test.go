//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeagent-io/nodeagent/internal/controlplane"
	"github.com/nodeagent-io/nodeagent/internal/testutil"
	"github.com/nodeagent-io/nodeagent/internal/volumetree"
	"github.com/nodeagent-io/nodeagent/pkg/podrefs"
)

// nodeKubeconfig writes a kubeconfig with node's own client identity, so
// that the Node authorizer treats its holder as that node's kubelet and
// the audit log attributes its requests to it.
func nodeKubeconfig(t *testing.T, node string) string {
	t.Helper()
	cfg, err := cp.NodeRESTConfig(node)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), node+".kubeconfig")
	if err := controlplane.WriteKubeconfig(path, cfg); err != nil {
		t.Fatal(err)
	}
	return path
}

// refKubelet is a reference kubelet (hack/refkubelet) serving one node.
type refKubelet struct {
	node, rootDir, logPath string
	proc                   *controlplane.Process
}

// failedSyncs counts the pod syncs the kubelet logged as failed: a failed
// sync is retried after a back-off, so its requests would not be the
// kubelet's steady state.
func (k *refKubelet) failedSyncs(t *testing.T) int {
	t.Helper()
	data, err := os.ReadFile(k.logPath)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(data), `"Error syncing pod, skipping"`)
}

// startRefKubelet runs refkubelet-<version> for node with the given
// change-detection strategy, sync frequency and extra flags, and stops it
// at the end.
func startRefKubelet(t *testing.T, version, node, strategy string, syncFrequency time.Duration, extraArgs ...string) *refKubelet {
	t.Helper()
	dir, err := controlplane.FindBinDir()
	if err != nil {
		t.Fatal(err)
	}
	binary := filepath.Join(dir, "refkubelet-"+version)
	if _, err := os.Stat(binary); err != nil {
		t.Fatalf("%s: %v; run `make refkubelet`", binary, err)
	}
	k := &refKubelet{node: node, rootDir: t.TempDir(), logPath: filepath.Join(t.TempDir(), "refkubelet.log")}
	k.proc, err = controlplane.StartProcess("refkubelet-"+version, binary, append([]string{
		"--node-name=" + node,
		"--kubeconfig=" + nodeKubeconfig(t, node),
		"--root-dir=" + k.rootDir,
		"--sync-frequency=" + syncFrequency.String(),
		"--configmap-change-detection-strategy=" + strategy,
	}, extraArgs...), k.logPath, controlplane.ProcessOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		k.proc.Stop(5 * time.Second)
		if t.Failed() {
			t.Logf("refkubelet log (%s):\n%s", node, k.proc.Tail(40))
		}
	})
	return k
}

// waitNodesAdmit waits until each node's kubelet has posted the pods it
// admits (status.allocatable), as a scheduler would before binding a pod
// there: a kubelet that has not yet reads no capacity and rejects the pods
// bound to it (phase Failed), as a loaded machine showed.
func waitNodesAdmit(t *testing.T, nodes ...string) {
	t.Helper()
	testutil.Eventually(t, pollInterval, 2*time.Minute, func() error {
		for _, name := range nodes {
			node, err := clientset.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if pods := node.Status.Allocatable[corev1.ResourcePods]; pods.IsZero() {
				return fmt.Errorf("node %s admits no pods yet", name)
			}
		}
		return nil
	})
}

// volumeDirs maps the volumes of pod under a kubelet-layout root dir to
// their directories, keyed plugin/name, with the random suffix of the
// service-account volume's name dropped so that two pods' keys match.
func volumeDirs(rootDir string, pod *corev1.Pod) map[string]string {
	dirs := map[string]string{}
	for _, plugin := range podrefs.Plugins {
		entries, _ := os.ReadDir(podrefs.VolumeDir(rootDir, string(pod.UID), plugin, ""))
		for _, e := range entries {
			name := e.Name()
			if strings.HasPrefix(name, "kube-api-access-") {
				name = "kube-api-access"
			}
			dirs[string(plugin)+"/"+name] = podrefs.VolumeDir(rootDir, string(pod.UID), plugin, e.Name())
		}
	}
	return dirs
}

// fileTree reads a volume directory (internal/volumetree), failing the
// test if it cannot.
func fileTree(t *testing.T, dir string) volumetree.Tree {
	t.Helper()
	tree, err := volumetree.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	return tree
}
