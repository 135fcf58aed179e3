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

// TestInstallFromREADME installs nodeagent the way the README's Install
// section says, on the kind cluster: `make push` to a registry on the kind
// network (kind's documented local registry, its image built here), then
// the README's Helm block and its kustomize block, read from README.md
// with only the addresses changed (the registry's for ghcr.io's, a local
// path for the repository's URL, the version pushed for the README's).
// After each, every node's agent runs exactly the pushed image; the git
// tree is as it was. It replaces the agents make e2e-kind deployed for the
// other tests, so make e2e-kind runs it last and alone.
func TestInstallFromREADME(t *testing.T) {
	ctx := context.Background()
	root := repoRoot(t)
	registry := startRegistry(t)
	gitBefore := gitStatus(t, root)
	version := strings.TrimSpace(string(mustOutput(t, exec.Command(filepath.Join(root, "hack/release/version.sh")))))
	// The kind nodes are amd64: one platform's builds, not the index of
	// two that make release's test (release-check) checks.
	push := exec.Command("make", "push", "REGISTRY="+registry, "IMAGE_PLATFORMS=linux/amd64")
	push.Dir = root
	out := mustOutput(t, push)
	digest := regexp.MustCompile(`Pushed \S+@(sha256:[0-9a-f]{64})`).FindStringSubmatch(string(out))
	if digest == nil {
		t.Fatalf("make push printed no digest:\n%s", out)
	}
	helmBlock, kustomizeBlock := readmeInstallBlocks(t, root)
	shell := installShell(t, root)

	// The README's commands install into the namespace make e2e-kind
	// deployed to: that deployment goes first.
	deleteDeployment(t)
	run := func(block string) {
		t.Helper()
		script := substituteAddresses(block, registry, version, root, shell.Dir)
		t.Logf("running:\n%s", script)
		shell.run(t, script)
	}
	run(helmBlock + " --plain-http")
	waitAgentsPulled(t, registry+"/nodeagent:"+version, digest[1])
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
	run(kustomizeBlock)
	waitAgentsPulled(t, registry+"/nodeagent:"+version, digest[1])
	if after := gitStatus(t, root); after != gitBefore {
		t.Errorf("the install changed the git tree:\nbefore:\n%s\nafter:\n%s", gitBefore, after)
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

// readmeInstallBlocks are the README's Install section's Helm and
// kustomize blocks, as written.
func readmeInstallBlocks(t *testing.T, root string) (helm, kustomize string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	section := string(data)
	start := strings.Index(section, "\n## Install\n")
	if start < 0 {
		t.Fatal("README.md has no ## Install section")
	}
	section = section[start+1:]
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	for _, block := range regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(section, -1) {
		switch body := strings.TrimSpace(block[1]); {
		case strings.HasPrefix(body, "helm install "):
			helm = body
		case strings.Contains(body, "kubectl apply -k"):
			kustomize = body
		}
	}
	if helm == "" || kustomize == "" {
		t.Fatalf("README.md's Install section lacks a helm install block or a kubectl apply -k block:\n%s", section)
	}
	return helm, kustomize
}

// substituteAddresses changes only where the README's commands point: the
// published registry to the local one, the repository's URL to this
// checkout (relative to dir, as kustomize wants), the README's release to
// the version pushed.
func substituteAddresses(block, registry, version, root, dir string) string {
	block = strings.ReplaceAll(block, "oci://ghcr.io/nodeagent-io/", "oci://"+registry+"/")
	block = strings.ReplaceAll(block, "newName: ghcr.io/nodeagent-io/", "newName: "+registry+"/")
	repository := regexp.MustCompile(`https://github\.com/nodeagent-io/nodeagent//(\S+)\?ref=\S+`)
	block = repository.ReplaceAllStringFunc(block, func(url string) string {
		path := repository.FindStringSubmatch(url)[1]
		rel, _ := filepath.Rel(filepath.Join(dir, "nodeagent"), filepath.Join(root, path))
		return rel
	})
	block = strings.ReplaceAll(block, "--version 0.1.0", "--version "+strings.TrimPrefix(version, "v"))
	return strings.ReplaceAll(block, "v0.1.0", version)
}

// shellEnv runs the README's blocks in an empty directory with helm and
// kubectl on PATH and the kind cluster as the current context.
type shellEnv struct{ Dir, path string }

func installShell(t *testing.T, root string) shellEnv {
	t.Helper()
	bin := t.TempDir()
	// kubectl as the nodes have it, so that this machine needs none.
	mustOutput(t, exec.Command("docker", "cp", clusterName+"-control-plane:/usr/bin/kubectl", filepath.Join(bin, "kubectl")))
	if err := os.Symlink(os.Getenv("NODEAGENT_HELM_BIN"), filepath.Join(bin, "helm")); err != nil {
		t.Fatal(err)
	}
	return shellEnv{Dir: t.TempDir(), path: bin + ":" + os.Getenv("PATH")}
}

func (s shellEnv) run(t *testing.T, script string) {
	t.Helper()
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", script)
	cmd.Dir = s.Dir
	cmd.Env = append(os.Environ(), "PATH="+s.path, "KUBECONFIG="+kubeconfigPath)
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Fatalf("%v", err)
	}
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
// agent on every node, each running image, and then requires that every
// node's containerd pulled image as the index digest pushed (its repository
// digests say so) and that the agent's container runs that image's content
// (containerd may name it after an earlier import of the same content, so
// the image ID is compared, not the name), reporting the image's version.
func waitAgentsPulled(t *testing.T, image, digest string) {
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
			if p.Spec.Containers[0].Image != image {
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
