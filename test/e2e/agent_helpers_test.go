//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeagent-io/nodeagent/internal/controlplane"
	"github.com/nodeagent-io/nodeagent/internal/testutil"
	"github.com/nodeagent-io/nodeagent/pkg/agent"
	"github.com/nodeagent-io/nodeagent/pkg/apimetrics"
	"github.com/nodeagent-io/nodeagent/pkg/podrefs"
	"github.com/nodeagent-io/nodeagent/test/e2eutil"
)

// agentProcess is the real nodeagent binary running `run` for one node.
type agentProcess struct {
	t        *testing.T
	node     string
	rootDir  string
	httpAddr string
	args     []string
	wrapper  []string
	logPath  string
	proc     *controlplane.Process
}

// createNode creates a Node object with the TTL annotation in seconds
// (negative: none), and deletes it at the end of the test.
func createNode(t *testing.T, name string, ttlSeconds int) {
	t.Helper()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if ttlSeconds >= 0 {
		node.Annotations = map[string]string{corev1.ObjectTTLAnnotationKey: strconv.Itoa(ttlSeconds)}
	}
	if _, err := clientset.CoreV1().Nodes().Create(context.Background(), node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = clientset.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
}

// startAgent runs the agent for node with a fresh root dir and extra args,
// and stops it (SIGTERM) at the end of the test.
func startAgent(t *testing.T, node string, extraArgs ...string) *agentProcess {
	t.Helper()
	return startAgentWith(t, node, cp.KubeconfigPath, extraArgs...)
}

// startAgentWith is startAgent with another identity's kubeconfig.
func startAgentWith(t *testing.T, node, kubeconfig string, extraArgs ...string) *agentProcess {
	t.Helper()
	return startAgentOpts(t, agentOptions{node: node, kubeconfig: kubeconfig, args: extraArgs})
}

// agentOptions are how startAgentOpts runs an agent.
type agentOptions struct {
	node, kubeconfig string
	// rootDir defaults to a fresh temporary directory.
	rootDir string
	// wrapper, if set, runs the agent through a command, such as setpriv.
	wrapper []string
	args    []string
}

func startAgentOpts(t *testing.T, o agentOptions) *agentProcess {
	t.Helper()
	if o.rootDir == "" {
		o.rootDir = t.TempDir()
	}
	if o.kubeconfig == "" {
		o.kubeconfig = cp.KubeconfigPath
	}
	a := &agentProcess{t: t, node: o.node, rootDir: o.rootDir, wrapper: o.wrapper, logPath: filepath.Join(t.TempDir(), "agent.log")}
	a.httpAddr = "127.0.0.1:" + strconv.Itoa(freePort(t))
	cfg := agent.DefaultConfig()
	cfg.NodeName, cfg.RootDir, cfg.HTTPAddress = o.node, a.rootDir, a.httpAddr
	// The test's own arguments come last, and win.
	a.args = append(append(cfg.Command(o.kubeconfig), "-v=2"), o.args...)
	a.start()
	t.Cleanup(func() {
		a.stop(syscall.SIGTERM)
		if t.Failed() {
			data, _ := os.ReadFile(a.logPath)
			t.Logf("agent log (%s):\n%s", o.node, lastLines(data, 60))
		}
	})
	return a
}

func (a *agentProcess) start() {
	a.t.Helper()
	argv := append(append(append([]string{}, a.wrapper...), e2eutil.NodeagentBinary(a.t)), a.args...)
	proc, err := controlplane.StartProcess("nodeagent", argv[0], argv[1:], a.logPath, controlplane.ProcessOptions{Bare: true})
	if err != nil {
		a.t.Fatal(err)
	}
	a.proc = proc
	waitReady(a.t, a.httpAddr, 30*time.Second)
}

// waitReady waits up to timeout for http://addr/readyz to answer 200.
func waitReady(t testing.TB, addr string, timeout time.Duration) {
	t.Helper()
	testutil.Eventually(t, pollInterval, timeout, func() error {
		resp, err := http.Get("http://" + addr + "/readyz")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("/readyz: %d", resp.StatusCode)
		}
		return nil
	})
}

// stop sends sig and waits for the process to exit.
func (a *agentProcess) stop(sig syscall.Signal) {
	if a.proc == nil {
		return
	}
	_ = a.proc.Signal(sig)
	if !a.proc.WaitExit(20 * time.Second) {
		a.t.Errorf("agent for %s did not exit 20 s after %s", a.node, sig)
	}
	a.proc.Stop(0)
	a.proc = nil
}

func (a *agentProcess) metrics() *apimetrics.Snapshot {
	a.t.Helper()
	s, err := apimetrics.ScrapeURL(context.Background(), http.DefaultClient, "http://"+a.httpAddr+"/metrics")
	if err != nil {
		a.t.Fatal(err)
	}
	return s
}

func (a *agentProcess) volumePath(pod *corev1.Pod, volume, file string) string {
	return filepath.Join(podrefs.VolumeDir(a.rootDir, string(pod.UID), podrefs.PluginConfigMap, volume), file)
}

// waitForFile waits until path holds want.
func (a *agentProcess) waitForFile(path, want string, timeout time.Duration) {
	a.t.Helper()
	testutil.Eventually(a.t, pollInterval, timeout, func() error {
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if string(data) != want {
			return fmt.Errorf("%s holds %q, want %q", path, data, want)
		}
		return nil
	})
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func lastLines(data []byte, n int) string {
	lines := 0
	for i := len(data) - 1; i >= 0; i-- {
		if data[i] == '\n' {
			lines++
			if lines > n {
				return string(data[i+1:])
			}
		}
	}
	return string(data)
}

type volume struct {
	name, configMap string
	optional        bool
	items           []corev1.KeyToPath
	defaultMode     *int32
}

// createPod creates a pod bound to node (no scheduler needed) whose one
// container mounts every volume given. It opts out of the service-account
// volume, so that a test counts only the ConfigMaps it made;
// createPodWithServiceAccount keeps it.
func createPod(t *testing.T, ns, name, node string, volumes ...volume) *corev1.Pod {
	t.Helper()
	return createPodSpec(t, ns, name, node, false, volumes...)
}

// createPodWithServiceAccount creates a pod as createPod does, but lets the
// ServiceAccount admission plugin add its kube-api-access volume, as it does
// to any pod on a real cluster.
func createPodWithServiceAccount(t *testing.T, ns, name, node string, volumes ...volume) *corev1.Pod {
	t.Helper()
	return createPodSpec(t, ns, name, node, true, volumes...)
}

func createPodSpec(t *testing.T, ns, name, node string, serviceAccountVolume bool, volumes ...volume) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PodSpec{
			NodeName:                     node,
			Containers:                   []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}},
			AutomountServiceAccountToken: &serviceAccountVolume,
		},
	}
	for _, v := range volumes {
		optional := v.optional
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: v.name, VolumeSource: corev1.VolumeSource{
			ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: v.configMap},
				Items:                v.items, Optional: &optional, DefaultMode: v.defaultMode,
			}}})
		pod.Spec.Containers[0].VolumeMounts = append(pod.Spec.Containers[0].VolumeMounts,
			corev1.VolumeMount{Name: v.name, MountPath: "/etc/" + v.name})
	}
	created, err := clientset.CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return created
}

func createConfigMap(t *testing.T, ns, name string, data map[string]string) *corev1.ConfigMap {
	t.Helper()
	cm, err := clientset.CoreV1().ConfigMaps(ns).Create(context.Background(),
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: data}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cm
}

// updateConfigMap sets one key of a ConfigMap's data.
func updateConfigMap(t *testing.T, ns, name, key, value string) {
	t.Helper()
	cm, err := clientset.CoreV1().ConfigMaps(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data[key] = value
	if _, err := clientset.CoreV1().ConfigMaps(ns).Update(context.Background(), cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// deletePodNow deletes a pod with no grace period: there is no kubelet
// here to finish a graceful deletion.
func deletePodNow(t *testing.T, pod *corev1.Pod) {
	t.Helper()
	err := clientset.CoreV1().Pods(pod.Namespace).Delete(context.Background(), pod.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
	if err != nil {
		t.Fatal(err)
	}
}
