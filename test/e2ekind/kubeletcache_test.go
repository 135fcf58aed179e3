//go:build e2e

package e2ekind

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/nodeagent-io/nodeagent/pkg/auditlog"
	"github.com/nodeagent-io/nodeagent/pkg/report"
)

const (
	kubeletConfig   = "/var/lib/kubelet/config.yaml"
	auditLogOnNode  = "/var/log/kubernetes/audit/audit.log"
	agentUser       = "system:serviceaccount:nodeagent:nodeagent"
	cacheSyncPeriod = 10 * time.Second
)

// setKubeletConfig rewrites keys of the kubelet configuration kubeadm wrote
// on a node and restarts the kubelet; it returns the original to restore.
func setKubeletConfig(t *testing.T, node string, keys map[string]string) string {
	t.Helper()
	original, err := readFile(node, kubeletConfig)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, line := range strings.Split(strings.TrimRight(original, "\n"), "\n") {
		key, _, _ := strings.Cut(line, ":")
		if _, replaced := keys[key]; !replaced {
			lines = append(lines, line)
		}
	}
	for k, v := range keys {
		lines = append(lines, k+": "+v)
	}
	writeKubeletConfig(t, node, strings.Join(lines, "\n")+"\n")
	return original
}

func writeKubeletConfig(t *testing.T, node, content string) {
	t.Helper()
	script := fmt.Sprintf("cat >%s.new <<'EOF'\n%sEOF\nmv %s.new %s && systemctl restart kubelet", kubeletConfig, content, kubeletConfig, kubeletConfig)
	if _, err := nodeExec(node, "sh", "-c", script); err != nil {
		t.Fatal(err)
	}
}

// setKubeletConfigUntilCleanup is setKubeletConfig, with the original
// configuration put back (and the kubelet restarted) when the test ends.
func setKubeletConfigUntilCleanup(t *testing.T, node string, keys map[string]string) {
	t.Helper()
	original := setKubeletConfig(t, node, keys)
	t.Cleanup(func() { writeKubeletConfig(t, node, original) })
}

// waitNodesReady waits until every one of nodes is Ready, as after their
// kubelets' restart.
func waitNodesReady(t *testing.T, nodes []string) {
	t.Helper()
	ctx := context.Background()
	eventually(t, 2*time.Minute, "the nodes Ready after the kubelets' restart", func() string {
		for _, node := range nodes {
			n, err := clientset.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
			if err != nil {
				return err.Error()
			}
			for _, c := range n.Status.Conditions {
				if c.Type == corev1.NodeReady && c.Status != corev1.ConditionTrue {
					return node + " is not Ready"
				}
			}
		}
		return ""
	})
}

// setAgentArgs replaces the agents' flags named in args and waits for the
// DaemonSet's rollout; it returns the original arguments.
func setAgentArgs(t *testing.T, args map[string]string) []string {
	t.Helper()
	ctx := context.Background()
	ds, err := clientset.AppsV1().DaemonSets("nodeagent").Get(ctx, "nodeagent", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	original := append([]string(nil), ds.Spec.Template.Spec.Containers[0].Args...)
	var changed []string
	for _, a := range original {
		name, _, _ := strings.Cut(a, "=")
		if _, ok := args[name]; !ok {
			changed = append(changed, a)
		}
	}
	for name, value := range args {
		changed = append(changed, name+"="+value)
	}
	updateAgentArgs(t, changed)
	return original
}

func updateAgentArgs(t *testing.T, args []string) {
	t.Helper()
	ctx := context.Background()
	ds, err := clientset.AppsV1().DaemonSets("nodeagent").Get(ctx, "nodeagent", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ds.Spec.Template.Spec.Containers[0].Args = args
	if ds, err = clientset.AppsV1().DaemonSets("nodeagent").Update(ctx, ds, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	generation := ds.Generation
	eventually(t, 3*time.Minute, "the agents' rollout", func() string {
		ds, err := clientset.AppsV1().DaemonSets("nodeagent").Get(ctx, "nodeagent", metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		st := ds.Status
		if st.ObservedGeneration < generation || st.UpdatedNumberScheduled != st.DesiredNumberScheduled || st.NumberReady != st.DesiredNumberScheduled {
			return fmt.Sprintf("%d of %d updated, %d ready", st.UpdatedNumberScheduled, st.DesiredNumberScheduled, st.NumberReady)
		}
		return ""
	})
}

// cachePods puts n pods on every node, each mounting its own ConfigMap and
// one that all share, and waits until they run.
func cachePods(t *testing.T, ns string, nodes []string, n int) {
	t.Helper()
	ctx := context.Background()
	create := func(cm *corev1.ConfigMap) {
		if _, err := clientset.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	create(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "shared"}, Data: map[string]string{"k": "v"}})
	var names []string
	for _, node := range nodes {
		for i := 0; i < n; i++ {
			name := fmt.Sprintf("%s-%d", node, i)
			names = append(names, name)
			create(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"k": name}})
			volume := func(v, cm string) corev1.Volume {
				return corev1.Volume{Name: v, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
					LocalObjectReference: corev1.LocalObjectReference{Name: cm}}}}
			}
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec: corev1.PodSpec{
					NodeName:                      node,
					Tolerations:                   []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
					TerminationGracePeriodSeconds: ptr.To[int64](1),
					Containers: []corev1.Container{{Name: "pause", Image: podImage, VolumeMounts: []corev1.VolumeMount{
						{Name: "own", MountPath: "/own"}, {Name: "shared", MountPath: "/shared"}}}},
					Volumes: []corev1.Volume{volume("own", name), volume("shared", "shared")},
				},
			}
			if _, err := clientset.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	eventually(t, 5*time.Minute, "the pods running", func() string {
		pods, err := clientset.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err.Error()
		}
		running := 0
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning {
				running++
			}
		}
		if running != len(names) {
			return fmt.Sprintf("%d of %d running", running, len(names))
		}
		return ""
	})
}

// TestBesideKubeletCache measures nodeagent's first-reference cache and the
// real kubelet v1.37 with the Cache strategy on one real cluster, at once,
// on the same pods: the kind kubelets are switched to
// configMapAndSecretChangeDetectionStrategy: Cache, both sides sync every
// 10 s, and the apiserver's audit log says which ConfigMap GETs came from
// the kubelets (system:node:<name>) and which from the agents (their
// ServiceAccount). They are within 10 % of each other, and `nodeagent
// analyze` predicts each kubelet's GETs within 10 % (checkAnalyzeCache), and
// the GETs of pods that come and go next (a CronJob every minute, a Job's
// burst) at most 10 % below and 20 % above (churn.check).
func TestBesideKubeletCache(t *testing.T) {
	nodes := clusterNodes(t)
	for _, node := range nodes {
		setKubeletConfigUntilCleanup(t, node, map[string]string{
			"configMapAndSecretChangeDetectionStrategy": "Cache",
			"syncFrequency": cacheSyncPeriod.String(),
		})
	}
	waitNodesReady(t, nodes)
	originalArgs := setAgentArgs(t, map[string]string{
		"--configmap-strategy": "Cache", "--cache-invalidation": "first-reference", "--sync-frequency": cacheSyncPeriod.String(),
	})
	t.Cleanup(func() { updateAgentArgs(t, originalArgs) })

	ns := testNamespace(t, "e2e-kind-cache")
	cachePods(t, ns, nodes, 10)
	time.Sleep(3 * cacheSyncPeriod) // every pod past its first syncs on both sides
	from := time.Now()
	const window = 2 * time.Minute
	t.Logf("measuring both sides for %s", window)
	time.Sleep(window)
	to := time.Now()
	// Pods that come and go next, on the same Cache settings: their
	// CronJob's first run is a minute's mark away at most.
	churn := startChurn(t)

	logPath := copyAuditLog(t)
	byUser, err := auditlog.Count(logPath, from, to)
	if err != nil {
		t.Fatal(err)
	}
	var kubelets, agents auditlog.Counts
	for user, c := range byUser {
		switch {
		case strings.HasPrefix(user, "system:node:"):
			kubelets.Add(c)
		case user == agentUser:
			agents.Add(c)
		}
	}
	seconds := to.Sub(from).Seconds()
	t.Logf("kubelets v1.37 (Cache): %.2f GET/s (%d quorum, %d cached), %d lists, %d watches, %d errors",
		float64(kubelets.Gets())/seconds, kubelets.QuorumGets, kubelets.CacheGets, kubelets.QuorumLists+kubelets.CacheLists, kubelets.Watches, kubelets.Errors)
	t.Logf("nodeagent first-reference: %.2f GET/s (%d quorum, %d cached), %d lists, %d watches, %d errors",
		float64(agents.Gets())/seconds, agents.QuorumGets, agents.CacheGets, agents.QuorumLists+agents.CacheLists, agents.Watches, agents.Errors)
	if kubelets.Gets() == 0 {
		t.Fatal("the kubelets sent no ConfigMap GETs: their Cache strategy is not in effect")
	}
	ratio := float64(agents.Gets()) / float64(kubelets.Gets())
	t.Logf("nodeagent / kubelet: %.2f", ratio)
	if math.Abs(ratio-1) > 0.10 {
		t.Errorf("nodeagent sent %d GETs, the kubelets %d: more than 10 %% apart", agents.Gets(), kubelets.Gets())
	}
	if agents.Errors != 0 {
		t.Errorf("%d of the agents' requests failed", agents.Errors)
	}
	writeBesideReport(t, kubelets, agents, seconds)
	checkAnalyzeCache(t, cacheSyncPeriod, auditlog.Window{From: from, To: to})
	churn.check(t, cacheSyncPeriod)
}

// writeBesideReport keeps the figures for docs/compare.md: each side's
// requests over the window, from the audit log.
func writeBesideReport(t *testing.T, kubelets, agents auditlog.Counts, seconds float64) {
	row := func(who string, c auditlog.Counts) []string {
		return []string{who, fmt.Sprintf("%.2f", float64(c.Gets())/seconds), fmt.Sprint(c.QuorumGets), fmt.Sprint(c.CacheGets),
			fmt.Sprint(c.QuorumLists + c.CacheLists), fmt.Sprint(c.Watches), fmt.Sprint(c.Errors)}
	}
	writeDocTable(t, "beside-kubelet-cache", report.Table{
		Header: []string{"client", fmt.Sprintf("GET/s over %.0f s", seconds), "quorum GETs", "cached GETs", "lists", "watches", "errors"},
		Rows:   [][]string{row("kind kubelets v1.37, Cache", kubelets), row("nodeagent first-reference", agents)},
	})
}
