//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/nodeagent-io/nodeagent/internal/controlplane"
	"github.com/nodeagent-io/nodeagent/internal/testutil"
	"github.com/nodeagent-io/nodeagent/test/e2eutil"
)

// dsCluster is a control plane of its own with the real DaemonSet
// controller, deploy/overlays/after applied, and a fake kubelet running
// the agents of the DaemonSet's pods on two nodes. It is separate from the
// package's control plane, where no controller may write. compare runs
// there as a ServiceAccount bound to deploy/compare's roles alone, which
// proves them enough.
type dsCluster struct {
	cp           *controlplane.ControlPlane
	client       kubernetes.Interface
	kubelet      *fakeKubelet
	nodes        []string
	originalArgs []string
	// compareKubeconfig speaks as the ServiceAccount compare-runner,
	// bound to deploy/compare's ClusterRole and Role.
	compareKubeconfig string
}

// startDSCluster starts a cluster whose fake kubelet gives the agent pods
// podIP and runs them on nodes.
func startDSCluster(t *testing.T, podIP string, nodes ...string) *dsCluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := controlplane.Start(ctx, controlplane.Options{Controllers: []string{"daemonset"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("control plane logs:\n%s", c.Logs(30))
		}
		c.Stop()
	})
	ds := &dsCluster{cp: c, client: kubernetes.NewForConfigOrDie(c.RESTConfig()), nodes: nodes}
	ds.originalArgs = daemonSetOf(t, applyManifests(t, c, kustomizeBuild(t, "overlays/after"))).Spec.Template.Spec.Containers[0].Args
	for _, name := range nodes {
		_, err := ds.client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{
			Name: name, Annotations: map[string]string{corev1.ObjectTTLAnnotationKey: "6"},
			// kubernetes.io/os, as a kubelet registers it: the
			// DaemonSet selects Linux nodes.
			Labels: map[string]string{"nodeagent.io/e2e-node": name, corev1.LabelOSStable: "linux"},
		}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	}
	kubeconfig, _ := serviceAccountClient(t, c)
	ds.kubelet = startFakeKubelet(t, ds.client, "nodeagent", kubeconfig, podIP, nodes...)
	ds.compareKubeconfig = compareRunner(t, c, ds.client)
	ds.waitRestored(t)
	return ds
}

// waitRestored waits until the DaemonSet carries its original template, no
// leftover annotation, and every node runs an agent with the original args.
func (c *dsCluster) waitRestored(t *testing.T) {
	t.Helper()
	testutil.Eventually(t, pollInterval, 2*time.Minute, func() error {
		ds, err := c.client.AppsV1().DaemonSets("nodeagent").Get(context.Background(), "nodeagent", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if _, ok := ds.Annotations["nodeagent.io/compare-original-template"]; ok {
			return fmt.Errorf("the original-template annotation is still there")
		}
		if args := ds.Spec.Template.Spec.Containers[0].Args; !slices.Equal(args, c.originalArgs) {
			return fmt.Errorf("DaemonSet args %q, want the original %q", args, c.originalArgs)
		}
		n := int32(len(c.nodes))
		if st := ds.Status; ds.Generation > st.ObservedGeneration || st.UpdatedNumberScheduled != n || st.NumberAvailable != n {
			return fmt.Errorf("rollout not done: %+v", st)
		}
		running := c.kubelet.agentArgs()
		if len(running) != len(c.nodes) {
			return fmt.Errorf("%d agents running, want %d", len(running), len(c.nodes))
		}
		for node, args := range running {
			if !slices.Equal(args, agentArgs(c.originalArgs)) {
				return fmt.Errorf("agent on %s runs with %q", node, args)
			}
		}
		return nil
	})
}

func (c *dsCluster) compare(t *testing.T, namespace, out string, extra ...string) *exec.Cmd {
	return exec.Command(e2eutil.NodeagentBinary(t), append([]string{"compare",
		"--kubeconfig=" + c.compareKubeconfig, "--fleet=daemonset", // its default target: nodeagent/nodeagent
		"--pods-per-node=5", "--sync-frequency=2s", "--sample-interval=5s",
		"--namespace=" + namespace, "--output-dir=" + out}, extra...)...)
}

// compareRunner applies deploy/compare and binds its roles to a
// ServiceAccount of their own, default/compare-runner; a kubeconfig of it.
func compareRunner(t *testing.T, c *controlplane.ControlPlane, client kubernetes.Interface) string {
	t.Helper()
	ctx := context.Background()
	applyManifests(t, c, kustomizeBuild(t, "compare"))
	runner := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: "default", Name: "compare-runner"}
	if _, err := client.CoreV1().ServiceAccounts(runner.Namespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: runner.Name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	meta := metav1.ObjectMeta{Name: "nodeagent-compare"}
	if _, err := client.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: meta, Subjects: []rbacv1.Subject{runner},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "nodeagent-compare"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	meta.Namespace = "nodeagent"
	if _, err := client.RbacV1().RoleBindings("nodeagent").Create(ctx, &rbacv1.RoleBinding{ObjectMeta: meta, Subjects: []rbacv1.Subject{runner},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "nodeagent-compare"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	path, _ := tokenKubeconfig(t, c, runner.Namespace, runner.Name)
	return path
}

// checkCleanedUp says whether the run's pods and ConfigMaps are gone.
func (c *dsCluster) checkCleanedUp(t *testing.T, namespace string) {
	t.Helper()
	ctx := context.Background()
	pods, err := c.client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
	if err != nil || len(pods.Items) != 0 {
		t.Errorf("%d of the run's pods are left (%v)", len(pods.Items), err)
	}
	cms, err := c.client.CoreV1().ConfigMaps(namespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/managed-by=nodeagent-compare"})
	if err != nil || len(cms.Items) != 0 {
		t.Errorf("%d of the run's ConfigMaps are left (%v)", len(cms.Items), err)
	}
}

// `nodeagent compare --daemonset` on the deployed agents: each mode is a
// real rollout by the DaemonSet controller, the apiserver's counters show
// the difference, other pods' volumes are in the model, and the DaemonSet
// is restored at the end, after Ctrl-C too.
func TestCompareDaemonSet(t *testing.T) {
	// Loopback pod IPs, which the apiserver's proxy refuses: the agents'
	// own metrics are out of reach, as behind a firewall.
	c := startDSCluster(t, "127.0.0.1", "ds-node-a", "ds-node-b")
	ctx := context.Background()

	// Someone else's pod with two ConfigMap volumes, one that a container
	// mounts and one that none does: the agents keep the first only, as
	// the kubelet would, and so must the model.
	if _, err := c.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.client.CoreV1().ConfigMaps("tenant").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app"}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	configMapVolume := func(name string) corev1.Volume {
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "app"}}}}
	}
	tenant := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "app"}, Spec: corev1.PodSpec{
		NodeName:   "ds-node-a",
		Containers: []corev1.Container{{Name: "app", Image: "app", VolumeMounts: []corev1.VolumeMount{{Name: "cfg", MountPath: "/etc/app"}}}},
		Volumes:    []corev1.Volume{configMapVolume("cfg"), configMapVolume("unused")},
	}}
	if _, err := c.client.CoreV1().Pods("tenant").Create(ctx, tenant, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	t.Run("watch needs the watch overlay", func(t *testing.T) {
		output, err := c.compare(t, "compare-ds-watch", t.TempDir(), "--modes=every-sync,watch").CombinedOutput()
		if err == nil || !strings.Contains(string(output), "deploy/overlays/watch") {
			t.Errorf("exit %v, output:\n%s\nwant a refusal that names deploy/overlays/watch", err, output)
		}
		ds, err := c.client.AppsV1().DaemonSets("nodeagent").Get(ctx, "nodeagent", metav1.GetOptions{})
		if err != nil || ds.Generation != 1 {
			t.Errorf("the refused run changed the DaemonSet (generation %d, %v)", ds.Generation, err)
		}
	})

	t.Run("before and after", func(t *testing.T) {
		// The report stays in _output/compare-daemonset: docs/compare.md
		// quotes it (record compare-daemonset).
		out := filepath.Join(repoRoot(t), "_output", "compare-daemonset")
		if err := os.RemoveAll(out); err != nil {
			t.Fatal(err)
		}
		cmd := c.compare(t, "compare-ds", out, "--phase-duration=20s")
		output, err := cmd.CombinedOutput()
		t.Logf("nodeagent compare:\n%s", output)
		if err != nil {
			t.Fatal(err)
		}
		report := e2eutil.ReadReport(t, out)
		s := report.Scenario
		// Served besides the run's pods: the tenant's pod (its mounted
		// ConfigMap volume and its service-account volume) and the two
		// agents' own pods (their service-account volumes).
		if s.DaemonSet != "nodeagent/nodeagent" || s.Nodes != 2 || s.AgentNodes != 2 || s.ServedPods != 3 || s.ServedVolumes != 4 || s.TTLSeconds != 6 || s.SyncFrequencySeconds != 2 {
			t.Errorf("scenario %+v: want the DaemonSet on 2 nodes, 3 served pods with 4 volumes, the nodes' TTL 6 s and S 2 s", s)
		}
		if len(report.Phases) != 2 {
			t.Fatalf("%d phases, want every-sync and first-reference", len(report.Phases))
		}
		before, after := report.Phases[0], report.Phases[1]
		// At S = 2 s every pod syncs every 3 s. One quorum GET per sync for
		// each ConfigMap a single pod reads: the 10 run pods' own, the
		// tenant's and the tenant's and both agents' kube-root-ca.crt. The
		// run's 5 pods per node share their namespace's kube-root-ca.crt:
		// one GET in each tick where one of them is due, 1 - (2/3)^5 per
		// second.
		if want := 14.0/3 + 2*(1-math.Pow(2.0/3, 5)); before.ExpectedAPIServerQPS < want*0.98 || before.ExpectedAPIServerQPS > want*1.02 {
			t.Errorf("every-sync model %.2f GET/s, want %.2f", before.ExpectedAPIServerQPS, want)
		}
		if r := before.APIServerGetQPS / before.ExpectedAPIServerQPS; r < 0.7 || r > 1.3 {
			t.Errorf("every-sync: measured %.2f GET/s, model %.2f", before.APIServerGetQPS, before.ExpectedAPIServerQPS)
		}
		if before.EtcdGetTotal < 0.9*before.APIServerGetTotal {
			t.Errorf("every-sync: %v etcd reads for %v GETs, want one each", before.EtcdGetTotal, before.APIServerGetTotal)
		}
		if after.EtcdGetQPS > 0.1 || after.APIServerGetQPS > 0.7*before.APIServerGetQPS {
			t.Errorf("first-reference: %.2f GET/s, %.2f etcd/s; every-sync %.2f GET/s", after.APIServerGetQPS, after.EtcdGetQPS, before.APIServerGetQPS)
		}
		// The pod IPs are loopback, which the apiserver's proxy refuses:
		// the run says so and measures from the apiserver alone.
		if before.AgentMetrics || !strings.Contains(string(output), "unreachable") {
			t.Errorf("agent metrics read through a proxy that refuses loopback pod IPs")
		}
		c.waitRestored(t)
		c.checkCleanedUp(t, "compare-ds")
	})

	t.Run("Ctrl-C restores", func(t *testing.T) {
		cmd := c.compare(t, "compare-ds-interrupted", t.TempDir(), "--phase-duration=5m", "--node-selector=nodeagent.io/e2e-node=ds-node-b")
		interruptWhileMeasuring(t, cmd, func() {
			ds, err := c.client.AppsV1().DaemonSets("nodeagent").Get(ctx, "nodeagent", metav1.GetOptions{})
			if err != nil || !slices.Contains(ds.Spec.Template.Spec.Containers[0].Args, "--cache-invalidation=every-sync") {
				t.Errorf("while measuring every-sync the DaemonSet is %v (%v)", ds, err)
			}
			pods, err := c.client.CoreV1().Pods("compare-ds-interrupted").List(ctx, metav1.ListOptions{})
			if err != nil || len(pods.Items) != 5 {
				t.Fatalf("%d pods of the run (%v), want 5", len(pods.Items), err)
			}
			for _, pod := range pods.Items {
				if pod.Spec.NodeName != "ds-node-b" {
					t.Errorf("pod %s on %s, outside --node-selector", pod.Name, pod.Spec.NodeName)
				}
			}
		})
		c.waitRestored(t)
		c.checkCleanedUp(t, "compare-ds-interrupted")
	})
}

// With pod IPs the apiserver's proxy can reach, the run reads the agents'
// own /metrics: the warm-up waits for every volume, and the agents' GET
// count matches the apiserver's. A pod on the node whose required
// ConfigMap is missing has a volume that never mounts: the warm-up waits
// for the volumes the agents keep, not for that one (it once did, and timed
// out).
func TestCompareDaemonSetReadsAgentMetrics(t *testing.T) {
	ip := proxyableIP(t)
	c := startDSCluster(t, ip, "ds-node-a")
	ctx := context.Background()
	if _, err := c.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "broken"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	broken := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "app"}, Spec: corev1.PodSpec{
		NodeName:   "ds-node-a",
		Containers: []corev1.Container{{Name: "app", Image: "app", VolumeMounts: []corev1.VolumeMount{{Name: "cfg", MountPath: "/etc/app"}}}},
		Volumes: []corev1.Volume{{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "never-created"}}}}},
	}}
	if _, err := c.client.CoreV1().Pods("broken").Create(ctx, broken, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	output, err := c.compare(t, "compare-ds-metrics", out, "--phase-duration=15s", "--modes=every-sync").CombinedOutput()
	t.Logf("nodeagent compare:\n%s", output)
	if err != nil {
		t.Fatal(err)
	}
	report := e2eutil.ReadReport(t, out)
	if len(report.Phases) != 1 {
		t.Fatalf("%d phases, want every-sync", len(report.Phases))
	}
	p := report.Phases[0]
	if !p.AgentMetrics || !strings.Contains(string(output), "volumes on disk") {
		t.Fatalf("the agents' metrics were not read through the proxy (pod IP %s)", ip)
	}
	if p.AgentGetTotal == 0 {
		t.Errorf("the agents counted no GETs (apiserver %v)", p.APIServerGetTotal)
	} else if err := agentCountsAgree(p, 0.1); err != nil {
		t.Error(err)
	}
	c.waitRestored(t)
}

// proxyableIP is an IPv4 address of this machine that the apiserver's
// proxy accepts as a pod IP (not loopback, not link-local) and where port
// 10356, the agent's container port, is free. Without one the test skips.
func proxyableIP(t *testing.T) string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		ipnet, ok := a.(*net.IPNet)
		if !ok || ipnet.IP.To4() == nil || ipnet.IP.IsLoopback() || ipnet.IP.IsLinkLocalUnicast() {
			continue
		}
		l, err := net.Listen("tcp", net.JoinHostPort(ipnet.IP.String(), "10356"))
		if err != nil {
			continue
		}
		l.Close()
		return ipnet.IP.String()
	}
	t.Skip("no IPv4 address besides loopback with port 10356 free: the apiserver's pod proxy cannot reach an agent here")
	return ""
}
