//go:build e2e

package e2ekind

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// registryPort is where the local registry answers on this machine, and
// what every node's containerd maps localhost:<port> to.
const registryPort = "5001"

// TestInstallFromREADME runs the README's commands for a checkout as they
// are written, in order, as a reader would: the blocks of "Is my cluster
// affected?" (clone, build, analyze) and of "Install from a checkout"
// (make push, then Helm, then kubectl), with the environment the README
// asks for (REGISTRY, a registry on the kind network, as kind documents a
// local registry: hack/image/localpublish's, its image built here by
// hack/kind/registry-image.sh) and what this machine lacks
// supplied around them, never in them: git redirects the README's
// repository URL to this checkout (so the clone is of its HEAD, not of
// uncommitted changes), IMAGE_PLATFORMS=linux/amd64 spares the arm64
// builds the kind nodes would not run (make release checks the index of
// every platform), and kubectl and helm are on PATH. After the Helm block
// and after the kubectl block, every node's agent runs exactly the image
// pushed; the clone's git tree is as it was. It replaces the agents make
// e2e-kind deployed for the other tests, so make e2e-kind runs it last and
// alone.
func TestInstallFromREADME(t *testing.T) {
	ctx := context.Background()
	root := repoRoot(t)
	registry := startRegistry(t)
	blocks := readmeCheckoutBlocks(t, root)
	shell := installShell(t, root, registry)

	// The README's commands install into the namespace make e2e-kind
	// deployed to: that deployment goes first.
	deleteDeployment(t)
	var digest, version, gitBefore string
	for _, block := range blocks {
		t.Logf("running in %s:\n%s", shell.Dir, block)
		out := shell.run(t, block)
		switch {
		case strings.HasPrefix(block, "git clone "):
			// The reader is now in the clone, as the block's cd leaves
			// them.
			shell.Dir = filepath.Join(shell.Dir, "nodeagent")
			describe := exec.Command("hack/release/version.sh")
			describe.Dir = shell.Dir
			version = strings.TrimSpace(string(mustOutput(t, describe)))
			gitBefore = gitStatus(t, shell.Dir)
			if !strings.Contains(out, "Kubelet behaviours: ") {
				t.Errorf("the clone's analyze printed no report:\n%s", out)
			}
		case strings.HasPrefix(block, "make push "):
			match := regexp.MustCompile(`Pushed \S+@(sha256:[0-9a-f]{64})`).FindStringSubmatch(out)
			if match == nil {
				t.Fatalf("make push printed no digest:\n%s", out)
			}
			digest = match[1]
		case strings.Contains(block, "helm install "):
			waitAgentsPulled(t, registry+"/nodeagent:"+version, registry+"/nodeagent:"+version, digest)
			shell.run(t, "helm uninstall nodeagent -n nodeagent --wait")
			eventually(t, 2*time.Minute, "the Helm release's agents gone", func() string {
				pods, err := clientset.CoreV1().Pods("nodeagent").List(ctx, metav1.ListOptions{})
				if err != nil {
					return err.Error()
				}
				if len(pods.Items) > 0 {
					return fmt.Sprintf("%d pods left", len(pods.Items))
				}
				return ""
			})
		case strings.HasPrefix(block, "kubectl apply -k "):
			// make push's kustomization pins the image by digest too.
			image := registry + "/nodeagent:" + version
			waitAgentsPulled(t, image, image+"@"+digest, digest)
		default:
			t.Fatalf("the README's block %q is one this test does not know how to check: teach it", block)
		}
	}
	if digest == "" {
		t.Fatal("the README's blocks ran no make push")
	}
	if after := gitStatus(t, shell.Dir); after != gitBefore {
		t.Errorf("the install changed the clone's git tree:\nbefore:\n%s\nafter:\n%s", gitBefore, after)
	}
}

// startRegistry runs the registry container on the kind network, published
// on this machine's localhost, points every node's localhost:registryPort
// at it, and returns the address make push uses.
func startRegistry(t *testing.T) string {
	t.Helper()
	image := os.Getenv("NODEAGENT_KIND_REGISTRY_IMAGE")
	if image == "" {
		t.Fatal("NODEAGENT_KIND_REGISTRY_IMAGE is not set; make e2e-kind sets it")
	}
	name := clusterName + "-registry"
	_ = exec.Command("docker", "rm", "-f", name).Run()
	mustOutput(t, exec.Command("docker", "run", "-d", "--name", name, "--network", "kind",
		"-p", "127.0.0.1:"+registryPort+":5000", image))
	t.Cleanup(func() { _ = exec.Command("docker", "rm", "-f", name).Run() })
	address := "localhost:" + registryPort
	eventually(t, time.Minute, "the registry answering", func() string {
		resp, err := http.Get("http://" + address + "/v2/")
		if err != nil {
			return err.Error()
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return resp.Status
		}
		return ""
	})
	hosts := fmt.Sprintf("[host.\"http://%s:5000\"]\n", name)
	for _, node := range clusterNodes(t) {
		dir := "/etc/containerd/certs.d/" + address
		if _, err := nodeExec(node, "sh", "-c", fmt.Sprintf("mkdir -p %s && printf '%%s' '%s' >%s/hosts.toml", dir, hosts, dir)); err != nil {
			t.Fatal(err)
		}
	}
	return address
}

// readmeCheckoutBlocks are the README's shell blocks for a checkout, as
// written, in order: those of "Is my cluster affected?" and "Install from
// a checkout".
func readmeCheckoutBlocks(t *testing.T, root string) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var blocks []string
	for _, heading := range []string{"## Is my cluster affected?", "## Install from a checkout"} {
		section := string(data)
		start := strings.Index(section, "\n"+heading+"\n")
		if start < 0 {
			t.Fatalf("README.md has no %q section", heading)
		}
		section = section[start+1:]
		if end := strings.Index(section[len(heading):], "\n## "); end >= 0 {
			section = section[:len(heading)+end]
		}
		for _, block := range regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(section, -1) {
			blocks = append(blocks, strings.TrimSpace(block[1]))
		}
	}
	return blocks
}

// shellEnv runs the README's blocks, starting in an empty directory, with
// helm and kubectl on PATH, the kind cluster as the current context,
// REGISTRY set as the README asks, and the README's repository URL
// redirected to this checkout.
type shellEnv struct {
	Dir string
	env []string
}

func installShell(t *testing.T, root, registry string) *shellEnv {
	t.Helper()
	bin := t.TempDir()
	// kubectl as the nodes have it, so that this machine needs none.
	mustOutput(t, exec.Command("docker", "cp", clusterName+"-control-plane:/usr/bin/kubectl", filepath.Join(bin, "kubectl")))
	if err := os.Symlink(os.Getenv("NODEAGENT_HELM_BIN"), filepath.Join(bin, "helm")); err != nil {
		t.Fatal(err)
	}
	return &shellEnv{Dir: t.TempDir(), env: append(os.Environ(),
		"PATH="+bin+":"+os.Getenv("PATH"), "KUBECONFIG="+kubeconfigPath,
		"REGISTRY="+registry, "IMAGE_PLATFORMS=linux/amd64",
		"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=url."+root+".insteadOf",
		"GIT_CONFIG_VALUE_0=https://github.com/nodeagent-io/nodeagent")}
}

// run runs script in bash, failing the test when it fails; its output.
func (s *shellEnv) run(t *testing.T, script string) string {
	t.Helper()
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", script)
	cmd.Dir = s.Dir
	cmd.Env = s.env
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Fatalf("%v", err)
	}
	return string(out)
}

// deleteDeployment removes what make e2e-kind deployed: the namespace and
// the cluster-wide RBAC.
func deleteDeployment(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	background := metav1.DeletePropagationBackground
	opts := metav1.DeleteOptions{PropagationPolicy: &background}
	for _, err := range []error{
		clientset.CoreV1().Namespaces().Delete(ctx, "nodeagent", opts),
		clientset.RbacV1().ClusterRoles().Delete(ctx, "nodeagent", opts),
		clientset.RbacV1().ClusterRoleBindings().Delete(ctx, "nodeagent", opts),
	} {
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
	}
	eventually(t, 3*time.Minute, "namespace nodeagent deleted", func() string {
		if _, err := clientset.CoreV1().Namespaces().Get(ctx, "nodeagent", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Sprintf("still there (%v)", err)
		}
		return ""
	})
}

// waitAgentsPulled waits until namespace nodeagent's DaemonSet has a ready
// agent on every node, each naming spec (image, or image@digest), and then requires that every
// node's containerd pulled image as the index digest pushed (its repository
// digests say so) and that the agent's container runs that image's content
// (containerd may name it after an earlier import of the same content, so
// the image ID is compared, not the name), reporting the image's version.
func waitAgentsPulled(t *testing.T, image, spec, digest string) {
	t.Helper()
	ctx := context.Background()
	nodes := clusterNodes(t)
	var agents []corev1.Pod
	eventually(t, 3*time.Minute, "an agent of "+image+" ready on every node", func() string {
		pods, err := clientset.CoreV1().Pods("nodeagent").List(ctx, metav1.ListOptions{})
		if err != nil {
			return err.Error()
		}
		agents = nil
		for _, p := range pods.Items {
			if p.DeletionTimestamp != nil || len(p.Status.ContainerStatuses) == 0 {
				continue
			}
			if p.Spec.Containers[0].Image != spec {
				return fmt.Sprintf("%s runs %s", p.Name, p.Spec.Containers[0].Image)
			}
			if p.Status.ContainerStatuses[0].Ready && p.Status.Phase == corev1.PodRunning {
				agents = append(agents, p)
			}
		}
		if len(agents) != len(nodes) {
			return fmt.Sprintf("ready on %d of %d nodes", len(agents), len(nodes))
		}
		return ""
	})
	pushed := image[:strings.LastIndex(image, ":")] + "@" + digest
	for _, pod := range agents {
		var pulled struct {
			Status struct {
				ID          string
				RepoDigests []string
			}
		}
		var running struct {
			Info struct {
				Config struct{ Image struct{ Image string } }
			}
		}
		_, container, _ := strings.Cut(pod.Status.ContainerStatuses[0].ContainerID, "://")
		crictlJSON(t, pod.Spec.NodeName, &pulled, "inspecti", image)
		crictlJSON(t, pod.Spec.NodeName, &running, "inspect", container)
		if !slices.Contains(pulled.Status.RepoDigests, pushed) {
			t.Errorf("%s: %s was pulled as %v, not as the pushed %s", pod.Spec.NodeName, image, pulled.Status.RepoDigests, pushed)
		}
		if got := running.Info.Config.Image.Image; got != pulled.Status.ID {
			t.Errorf("%s: agent %s runs image %s, not the pulled %s", pod.Spec.NodeName, pod.Name, got, pulled.Status.ID)
		}
		checkAgentVersion(t, pod, image[strings.LastIndex(image, ":")+1:])
	}
}

// crictlJSON runs crictl on node with -o json and decodes what it prints.
func crictlJSON(t *testing.T, node string, v interface{}, args ...string) {
	t.Helper()
	out, err := nodeExec(node, append([]string{"crictl", args[0], "-o", "json"}, args[1:]...)...)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(out, v); err != nil {
		t.Fatalf("crictl %s on %s: %v", strings.Join(args, " "), node, err)
	}
}

func repoRoot(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(wd, "..", "..")
}

func gitStatus(t *testing.T, root string) string {
	t.Helper()
	cmd := exec.Command("git", "status", "--porcelain")
	cmd.Dir = root
	return string(mustOutput(t, cmd))
}

// mustOutput runs cmd and returns its standard output, failing the test
// with its standard error if it fails.
func mustOutput(t *testing.T, cmd *exec.Cmd) []byte {
	t.Helper()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s%s", strings.Join(cmd.Args, " "), err, out, stderr.String())
	}
	return out
}
