//go:build e2e

package e2e

import (
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/nodeagent-io/nodeagent/internal/controlplane"
	"github.com/nodeagent-io/nodeagent/test/e2eutil"
)

// fakeKubelet plays the scheduler and the kubelet of some nodes, for the
// pods of DaemonSets only, so that the real DaemonSet controller can roll
// the nodeagent DaemonSet out on a control plane without nodes. For each
// DaemonSet pod meant for one of its nodes it binds the pod, starts the
// nodeagent binary with the container's args (the root dir and listen
// address moved to where a test may write and listen), and marks the pod
// Running and Ready once the agent's /readyz answers. A pod being deleted
// has its agent stopped with SIGTERM and is then removed.
type fakeKubelet struct {
	t          *testing.T
	client     kubernetes.Interface
	namespace  string
	kubeconfig string // the agents' identity
	nodes      []string
	// podIP is what pod status reports, and where the agents listen.
	podIP string

	mu     sync.Mutex
	agents map[types.UID]*podAgent
}

// podAgent is the agent process of one DaemonSet pod.
type podAgent struct {
	node     string
	args     []string
	httpAddr string
	proc     *controlplane.Process
	ready    bool
	logPath  string
}

func startFakeKubelet(t *testing.T, client kubernetes.Interface, namespace, kubeconfig, podIP string, nodes ...string) *fakeKubelet {
	k := &fakeKubelet{t: t, client: client, namespace: namespace, kubeconfig: kubeconfig, nodes: nodes, podIP: podIP, agents: map[types.UID]*podAgent{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			k.syncOnce(ctx)
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		k.mu.Lock()
		defer k.mu.Unlock()
		for _, a := range k.agents {
			a.stop()
			if t.Failed() {
				data, _ := os.ReadFile(a.logPath)
				t.Logf("agent log (%s):\n%s", a.node, lastLines(data, 40))
			}
		}
	})
	return k
}

func (k *fakeKubelet) syncOnce(ctx context.Context) {
	pods, err := k.client.CoreV1().Pods(k.namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return // the next round retries; a test's own checks catch a dead apiserver
	}
	for i := range pods.Items {
		pod := &pods.Items[i]
		if owner := metav1.GetControllerOf(pod); owner == nil || owner.Kind != "DaemonSet" {
			continue
		}
		if err := k.syncPod(ctx, pod); err != nil && ctx.Err() == nil {
			k.t.Logf("fake kubelet: pod %s: %v", pod.Name, err)
		}
	}
}

func (k *fakeKubelet) syncPod(ctx context.Context, pod *corev1.Pod) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	a := k.agents[pod.UID]
	switch {
	case pod.Spec.NodeName == "":
		// The scheduler's part: the DaemonSet controller pins the pod to
		// its node with a required node affinity on metadata.name.
		if node := daemonPodNode(pod); slices.Contains(k.nodes, node) {
			return k.client.CoreV1().Pods(pod.Namespace).Bind(ctx, &corev1.Binding{
				ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID},
				Target:     corev1.ObjectReference{Kind: "Node", Name: node},
			}, metav1.CreateOptions{})
		}
	case !slices.Contains(k.nodes, pod.Spec.NodeName):
	case pod.DeletionTimestamp != nil:
		if a != nil {
			a.stop()
			delete(k.agents, pod.UID)
		}
		err := k.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64(0))})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	case a == nil:
		a, err := k.startAgent(pod)
		if err != nil {
			return err
		}
		k.agents[pod.UID] = a
	case !a.ready && a.isReady():
		a.ready = true
		return k.markReady(ctx, pod)
	}
	return nil
}

// agentArgs are a DaemonSet container's args as the fake kubelet runs
// them: without "run", and without the root dir and listen address, which
// it sets itself.
func agentArgs(containerArgs []string) []string {
	var args []string
	for _, arg := range containerArgs[1:] { // [0] is "run"
		if !strings.HasPrefix(arg, "--root-dir=") && !strings.HasPrefix(arg, "--http-address=") {
			args = append(args, arg)
		}
	}
	return args
}

// daemonPodNode reads the node a DaemonSet pod is meant for.
func daemonPodNode(pod *corev1.Pod) string {
	aff := pod.Spec.Affinity
	if aff == nil || aff.NodeAffinity == nil || aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return ""
	}
	for _, term := range aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		for _, f := range term.MatchFields {
			if f.Key == "metadata.name" && len(f.Values) == 1 {
				return f.Values[0]
			}
		}
	}
	return ""
}

func (k *fakeKubelet) startAgent(pod *corev1.Pod) (*podAgent, error) {
	c := pod.Spec.Containers[0]
	dir, err := os.MkdirTemp(k.t.TempDir(), pod.Spec.NodeName+"-")
	if err != nil {
		return nil, err
	}
	// On loopback every agent gets a port of its own; on another address
	// the agent listens on the container port, where the apiserver's pod
	// proxy looks for it (so one node per address).
	port := 10356
	if net.ParseIP(k.podIP).IsLoopback() {
		port = freePort(k.t)
	}
	a := &podAgent{node: pod.Spec.NodeName, httpAddr: k.podIP + ":" + strconv.Itoa(port), logPath: filepath.Join(dir, "agent.log")}
	a.args = agentArgs(c.Args)
	args := append([]string{"run", "--kubeconfig=" + k.kubeconfig, "--root-dir=" + filepath.Join(dir, "root"), "--http-address=" + a.httpAddr}, a.args...)
	// NODE_NAME as the downward API sets it.
	proc, err := controlplane.StartProcess("nodeagent", e2eutil.NodeagentBinary(k.t), args, a.logPath, controlplane.ProcessOptions{Env: []string{"NODE_NAME=" + pod.Spec.NodeName}, Bare: true})
	if err != nil {
		return nil, err
	}
	a.proc = proc
	return a, nil
}

func (a *podAgent) isReady() bool {
	client := http.Client{Timeout: time.Second}
	resp, err := client.Get("http://" + a.httpAddr + "/readyz")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

func (a *podAgent) stop() {
	a.proc.Stop(20 * time.Second)
}

// markReady reports the pod Running and Ready, as the kubelet's status
// manager would once the readiness probe passes.
func (k *fakeKubelet) markReady(ctx context.Context, pod *corev1.Pod) error {
	now := metav1.Now()
	pod = pod.DeepCopy()
	pod.Status.Phase = corev1.PodRunning
	pod.Status.PodIP, pod.Status.PodIPs = k.podIP, []corev1.PodIP{{IP: k.podIP}}
	pod.Status.HostIP, pod.Status.HostIPs = k.podIP, []corev1.HostIP{{IP: k.podIP}}
	pod.Status.StartTime = &now
	pod.Status.Conditions = nil
	for _, c := range []corev1.PodConditionType{corev1.PodScheduled, corev1.PodInitialized, corev1.ContainersReady, corev1.PodReady} {
		pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: c, Status: corev1.ConditionTrue, LastTransitionTime: now})
	}
	c := pod.Spec.Containers[0]
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{
		Name: c.Name, Image: c.Image, ImageID: "fake://" + c.Image, Ready: true, Started: new(true),
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}},
	}}
	_, err := k.client.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, pod, metav1.UpdateOptions{})
	return err
}

// agentArgs returns, per node, the args of the agent running there.
func (k *fakeKubelet) agentArgs() map[string][]string {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := map[string][]string{}
	for _, a := range k.agents {
		out[a.node] = a.args
	}
	return out
}
