//go:build e2e

package e2ekind

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
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

// volumeDir is where root's writer keeps a pod's volume.
func volumeDir(root string, uid types.UID, plugin, volume string) string {
	return path.Join(root, "pods", string(uid), "volumes", "kubernetes.io~"+plugin, volume)
}

// entry is one file of a volume as a reader of the node's disk sees it.
type entry struct {
	kind   byte // tar's type flag: file, directory or symlink
	mode   int64
	target string // a symlink's target
	sum    string // a file's SHA-256
}

func (e entry) String() string {
	return fmt.Sprintf("type %c mode %o target %q sum %.12s", e.kind, e.mode, e.target, e.sum)
}

// timestamped matches the atomic writer's generation directories, whose
// names hold the time of the write and so differ between two writers.
var timestamped = regexp.MustCompile(`\.\.\d{4}_\d{2}_\d{2}_\d{2}_\d{2}_\d{2}\.\d+`)

// readTree reads a directory on a node: every path below it (generation
// directories named ..<generation>), with type, mode, link target and
// content hash. A missing directory is an error.
func readTree(node, dir string) (map[string]entry, error) {
	out, err := nodeExec(node, "tar", "-C", dir, "-cf", "-", ".")
	if err != nil {
		return nil, err
	}
	tree := map[string]entry{}
	tr := tar.NewReader(bytes.NewReader(out))
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return tree, nil
		}
		if err != nil {
			return nil, err
		}
		name := strings.TrimSuffix(strings.TrimPrefix(hdr.Name, "./"), "/")
		if name == "." || name == "" {
			continue
		}
		e := entry{kind: hdr.Typeflag, mode: hdr.Mode & 0o7777, target: timestamped.ReplaceAllString(hdr.Linkname, "..<generation>")}
		if hdr.Typeflag == tar.TypeReg {
			h := sha256.New()
			if _, err := io.Copy(h, tr); err != nil {
				return nil, err
			}
			e.sum = hex.EncodeToString(h.Sum(nil))
		}
		tree[timestamped.ReplaceAllString(name, "..<generation>")] = e
	}
}

// diffTrees says how two trees differ, or returns "" when they are equal.
func diffTrees(want, got map[string]entry) string {
	var lines []string
	for p, w := range want {
		g, ok := got[p]
		switch {
		case !ok:
			lines = append(lines, "missing "+p)
		case g != w:
			lines = append(lines, fmt.Sprintf("%s: kubelet %v, nodeagent %v", p, w, g))
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			lines = append(lines, "extra "+p)
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
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

// eventually polls cond every second until it returns "" or the timeout
// passes, then fails the test with cond's last answer.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		reason := cond()
		if reason == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after %s: %s", what, timeout, reason)
		}
		time.Sleep(time.Second)
	}
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
