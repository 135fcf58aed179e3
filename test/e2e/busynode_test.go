//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeagent-io/nodeagent/internal/testutil"
	"github.com/nodeagent-io/nodeagent/pkg/auditlog"
	"github.com/nodeagent-io/nodeagent/pkg/nodeidentity"
	"github.com/nodeagent-io/nodeagent/pkg/report"
)

// A busy node: seventy pods of mixed volumes, some failing on purpose
// (a missing ConfigMap, a missing key, items whose paths collide), and one
// pod of a hundred volumes of one ConfigMap, on a node whose TTL is 0 at
// S = 2 s, where every remount reads its ConfigMaps from the apiserver and
// the client limit (50 QPS, burst 100) is the bottleneck. nodeagent and
// the reference kubelet v1.37 serve the same pods on two nodes side by
// side; nodeagent must send the same GETs (within 10 %), have every
// healthy volume on disk and post every failure's FailedMount, first
// mounts' and remounts', no later than the kubelet (docs/reliability.md,
// "A busy node").

const (
	busySync        = 2 * time.Second
	busyWindow      = 20 * time.Second
	busyHealthyPods = 50
	busyConfigMaps  = 20
	busyBigVolumes  = 100
	// The ConfigMap deleted, and the one that loses a listed key.
	busyDeletedIndex, busyKeyRemovedIndex = 19, 18
)

var (
	busyDeleted    = fmt.Sprintf("busy-cm-%02d", busyDeletedIndex)
	busyKeyRemoved = fmt.Sprintf("busy-cm-%02d", busyKeyRemovedIndex)
)

func deleteConfigMap(t *testing.T, ns, name string) {
	t.Helper()
	if err := clientset.CoreV1().ConfigMaps(ns).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}

// busyPod is one pod of the busy node, and what is expected of it.
type busyPod struct {
	name    string
	volumes []volume
	// healthy volumes must be on disk; failing ones must get a FailedMount.
	healthy []string
	failing bool
}

func busyPods() []busyPod {
	var pods []busyPod
	cm := func(i int) string { return fmt.Sprintf("busy-cm-%02d", i%busyConfigMaps) }
	for i := range busyHealthyPods {
		pods = append(pods, busyPod{name: fmt.Sprintf("ok-%02d", i), healthy: []string{"whole", "item"}, volumes: []volume{
			{name: "whole", configMap: cm(i)},
			{name: "item", configMap: cm(i + 1), items: []corev1.KeyToPath{{Key: "config.yaml", Path: "conf/app.yaml"}}},
		}})
	}
	for i := range 8 {
		pods = append(pods, busyPod{name: fmt.Sprintf("missing-%d", i), healthy: []string{"whole"}, failing: true, volumes: []volume{
			{name: "whole", configMap: cm(i)},
			{name: "gone", configMap: fmt.Sprintf("busy-absent-%d", i)},
		}})
	}
	for i := range 6 {
		pods = append(pods, busyPod{name: fmt.Sprintf("nokey-%d", i), failing: true, volumes: []volume{
			{name: "item", configMap: cm(i), items: []corev1.KeyToPath{{Key: "absent", Path: "absent"}}},
		}})
	}
	for i := range 6 {
		pods = append(pods, busyPod{name: fmt.Sprintf("conflict-%d", i), failing: true, volumes: []volume{
			// One item's file is the other's directory: the writer refuses.
			{name: "item", configMap: cm(i), items: []corev1.KeyToPath{{Key: "config.yaml", Path: "a"}, {Key: "extra", Path: "a/b"}}},
		}})
	}
	big := busyPod{name: "hundred"}
	for i := range busyBigVolumes {
		name := fmt.Sprintf("v%03d", i)
		big.volumes = append(big.volumes, volume{name: name, configMap: "busy-shared",
			items: []corev1.KeyToPath{{Key: fmt.Sprintf("key-%03d", i), Path: "value"}}})
		big.healthy = append(big.healthy, name)
	}
	return append(pods, big)
}

func TestBusyNodeAgainstKubelet(t *testing.T) {
	ns := createNamespace(t, "busy")
	shared := map[string]string{}
	for i := range busyBigVolumes {
		shared[fmt.Sprintf("key-%03d", i)] = fmt.Sprintf("value %d\n", i)
	}
	createConfigMap(t, ns, "busy-shared", shared)
	for i := range busyConfigMaps {
		createConfigMap(t, ns, fmt.Sprintf("busy-cm-%02d", i), map[string]string{"config.yaml": fmt.Sprintf("n: %d\n", i), "extra": "x"})
	}

	agentNode, kubeletNode := "busy-nodeagent", "busy-kubelet-v137"
	type node struct {
		name, rootDir string
		pods          map[string]*corev1.Pod
	}
	nodes := []*node{{name: agentNode}, {name: kubeletNode}}
	for _, n := range nodes {
		createNode(t, n.name, 0)
	}
	agent := startAgentWith(t, agentNode, nodeKubeconfig(t, agentNode), "--sync-frequency="+busySync.String(),
		"--configmap-strategy=Cache", "--cache-invalidation=first-reference")
	kubelet := startRefKubelet(t, "v1.37", kubeletNode, "Cache", busySync)
	nodes[0].rootDir, nodes[1].rootDir = agent.rootDir, kubelet.rootDir

	created := time.Now()
	specs := busyPods()
	for _, n := range nodes {
		n.pods = map[string]*corev1.Pod{}
		for _, p := range specs {
			n.pods[p.name] = createPodWithServiceAccount(t, ns, p.name+"-"+n.name, n.name, p.volumes...)
		}
	}

	// Every healthy volume on disk, and every failing pod's FailedMount.
	mounted := map[string]time.Duration{}
	evented := map[string]time.Duration{}
	testutil.Eventually(t, pollInterval, 3*time.Minute, func() error {
		var missing []string
		for _, n := range nodes {
			if _, done := mounted[n.name]; done {
				continue
			}
			for _, p := range specs {
				dirs := volumeDirs(n.rootDir, n.pods[p.name])
				for _, v := range p.healthy {
					if dirs["kubernetes.io~configmap/"+v] == "" {
						missing = append(missing, fmt.Sprintf("%s: %s/%s", n.name, p.name, v))
					}
				}
			}
			if len(missing) == 0 {
				mounted[n.name] = time.Since(created)
			}
		}
		failed := failedMountsByNode(t, ns)
		for _, n := range nodes {
			if _, done := evented[n.name]; done {
				continue
			}
			var quiet []string
			for _, p := range specs {
				if p.failing && failed[n.name][n.pods[p.name].Name] == 0 {
					quiet = append(quiet, p.name)
				}
			}
			if len(quiet) == 0 {
				evented[n.name] = time.Since(created)
			} else {
				missing = append(missing, fmt.Sprintf("%s: no FailedMount for %v", n.name, quiet))
			}
		}
		if len(missing) > 0 {
			if len(missing) > 5 {
				missing = append(missing[:5], fmt.Sprintf("and %d more", len(missing)-5))
			}
			return fmt.Errorf("%s", strings.Join(missing, "; "))
		}
		return nil
	})
	t.Logf("every healthy volume on disk: %v; every failing pod's FailedMount: %v", mounted, evented)
	noSlower(t, "every healthy volume on disk", mounted[agentNode], mounted[kubeletNode])
	noSlower(t, "a FailedMount for every failing pod", evented[agentNode], evented[kubeletNode])

	// The steady state: the same GETs as the kubelet's, within 10 %.
	from := time.Now()
	time.Sleep(busyWindow)
	to := time.Now()
	counts, err := auditlog.Count(cp.AuditLogPath(), from, to)
	if err != nil {
		t.Fatal(err)
	}
	a, k := counts[nodeidentity.User(agentNode)], counts[nodeidentity.User(kubeletNode)]
	t.Logf("over %s: nodeagent %+v (%.1f GET/s), kubelet v1.37 %+v (%.1f GET/s)", to.Sub(from).Round(time.Second),
		a, float64(a.Gets())/to.Sub(from).Seconds(), k, float64(k.Gets())/to.Sub(from).Seconds())
	if math.Abs(float64(a.Gets()-k.Gets())) > 0.1*float64(k.Gets()) {
		t.Errorf("GETs: nodeagent %d, kubelet %d: more than 10%% apart", a.Gets(), k.Gets())
	}

	// Remounts that fail: a mounted ConfigMap deleted, and a key that a
	// volume lists removed. Each node must post a FailedMount for every
	// pod that reads them.
	before := failedMountsByNode(t, ns)
	deleteConfigMap(t, ns, busyDeleted)
	removeConfigMapKey(t, ns, busyKeyRemoved, "config.yaml")
	changed := time.Now()
	var readers []string
	for i := range busyHealthyPods {
		if i%busyConfigMaps == busyDeletedIndex || (i+1)%busyConfigMaps == busyDeletedIndex || (i+1)%busyConfigMaps == busyKeyRemovedIndex {
			readers = append(readers, fmt.Sprintf("ok-%02d", i))
		}
	}
	posted := map[string]time.Duration{}
	testutil.Eventually(t, pollInterval, 2*time.Minute, func() error {
		now := failedMountsByNode(t, ns)
		var quiet []string
		for _, n := range nodes {
			if _, done := posted[n.name]; done {
				continue
			}
			var left []string
			for _, r := range readers {
				pod := n.pods[r].Name
				if now[n.name][pod] <= before[n.name][pod] {
					left = append(left, r)
				}
			}
			if len(left) == 0 {
				posted[n.name] = time.Since(changed)
			} else {
				quiet = append(quiet, fmt.Sprintf("%s: no new FailedMount for %v", n.name, left))
			}
		}
		if len(quiet) > 0 {
			return fmt.Errorf("%s", strings.Join(quiet, "; "))
		}
		return nil
	})
	t.Logf("a FailedMount for every pod whose remount fails, after the change: %v", posted)
	noSlower(t, "a FailedMount for every failed remount", posted[agentNode], posted[kubeletNode])

	window := to.Sub(from).Seconds()
	gets := func(n int) string { return fmt.Sprintf("%d (%.1f/s)", n, float64(n)/window) }
	writeDocTable(t, "busy-node", report.Table{
		Header: []string{"", "nodeagent", "kubelet v1.37"},
		Rows: [][]string{
			{"every healthy volume on disk, from the pods' creation", report.FormatSeconds(mounted[agentNode].Seconds()), report.FormatSeconds(mounted[kubeletNode].Seconds())},
			{"a `FailedMount` posted for every failing pod", report.FormatSeconds(evented[agentNode].Seconds()), report.FormatSeconds(evented[kubeletNode].Seconds())},
			{fmt.Sprintf("ConfigMap GETs over %.0f s (audit log)", window), gets(a.Gets()), gets(k.Gets())},
			{fmt.Sprintf("a `FailedMount` for each of the %d pods whose remount fails, after a ConfigMap is deleted and a listed key removed", len(readers)),
				report.FormatSeconds(posted[agentNode].Seconds()), report.FormatSeconds(posted[kubeletNode].Seconds())},
		},
	})
}

// noSlower holds nodeagent to the kubelet's time for the same work on the
// same pods, with two seconds of slack: one poll of the test, and the
// spread of the pods' sync phases (S = 2 s) from one node to the other.
// On this node the client limit, not the agent, sets both times: every
// remount reads from the apiserver (TTL 0) and the pods ask about 120
// GETs a second of a client that sends 50.
func noSlower(t *testing.T, what string, agent, kubelet time.Duration) {
	t.Helper()
	if agent > kubelet+2*time.Second {
		t.Errorf("%s: nodeagent took %s, the kubelet %s", what, agent.Round(100*time.Millisecond), kubelet.Round(100*time.Millisecond))
	}
}

// failedMountsByNode counts FailedMount events by reporting node and pod.
func failedMountsByNode(t *testing.T, ns string) map[string]map[string]int {
	t.Helper()
	events, err := clientset.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]int{}
	for _, e := range events.Items {
		if e.Reason != "FailedMount" {
			continue
		}
		host := e.Source.Host
		if host == "" {
			host = e.ReportingInstance
		}
		if out[host] == nil {
			out[host] = map[string]int{}
		}
		out[host][e.InvolvedObject.Name] += int(max(e.Count, 1))
	}
	return out
}
