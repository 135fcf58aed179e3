//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeagent-io/nodeagent/internal/testutil"
	"github.com/nodeagent-io/nodeagent/internal/volumetree"
	"github.com/nodeagent-io/nodeagent/pkg/auditlog"
	"github.com/nodeagent-io/nodeagent/pkg/nodeidentity"
)

// A differential node pairs nodeagent with the reference kubelet that has
// the same ConfigMap behaviour.
type differentialPair struct {
	name         string
	agentNode    string
	agentArgs    []string
	kubeletNode  string
	kubeletBuild string
	// watch: both use the Watch strategy (one watch per ConfigMap, no
	// GETs); otherwise the Cache strategy.
	watch bool
	// everySync: the cache is dropped at every pod sync (before #120255).
	everySync bool
	// kubeletArgs are the reference kubelet's further flags; owners says
	// both honour the owner fields (KEP-5936's gate on).
	kubeletArgs []string
	owners      bool
}

const (
	diffSync = 2 * time.Second
	diffTTL  = 10 // seconds
	// diffWindow is long enough that each pod syncs about 30 times and
	// each cached ConfigMap refreshes about 8 times.
	diffWindow = 90 * time.Second
	// diffDefaultUser and diffItemUser are the owners the pods' volumes
	// ask for (differentialPods).
	diffDefaultUser, diffItemUser = 1000, 2000
)

// TestDifferentialAgainstRealKubelets runs the same pods on a nodeagent
// node and on a reference-kubelet node, for the kubelet before #120255
// (v1.28, against every-sync), after it (v1.37, against first-reference)
// and with the Watch strategy (v1.37, against watch), and holds nodeagent to the kubelet: the same files,
// and the same ConfigMap requests as the apiserver's audit log records
// them. Where nodeagent differs on purpose (docs/kubelet-behaviour.md),
// the test names the case and checks nodeagent's behaviour instead.
func TestDifferentialAgainstRealKubelets(t *testing.T) {
	pairs := []differentialPair{
		{name: "before #120255", agentNode: "diff-every-sync", kubeletNode: "diff-kubelet-v128", kubeletBuild: "v1.28", everySync: true,
			agentArgs: []string{"--configmap-strategy=Cache", "--cache-invalidation=every-sync"}},
		{name: "after #120255", agentNode: "diff-first-reference", kubeletNode: "diff-kubelet-v137", kubeletBuild: "v1.37",
			agentArgs: []string{"--configmap-strategy=Cache", "--cache-invalidation=first-reference"}},
		{name: "watch", agentNode: "diff-watch", kubeletNode: "diff-kubelet-v137-watch", kubeletBuild: "v1.37", watch: true,
			agentArgs: []string{"--configmap-strategy=Watch"}},
		{name: "owner fields, gate on", agentNode: "diff-owners", kubeletNode: "diff-kubelet-v137-owners", kubeletBuild: "v1.37", owners: true,
			agentArgs:   []string{"--configmap-strategy=Cache", "--cache-invalidation=first-reference", "--feature-gates=AtomicWriteVolumeUserFields=true"},
			kubeletArgs: []string{"--feature-gates=AtomicWriteVolumeUserFields=true"}},
	}
	started := time.Now()
	ns := createNamespace(t, "differential")
	createDifferentialConfigMaps(t, ns)

	type served struct {
		rootDir string
		pods    map[string]*corev1.Pod // by the pod's base name
	}
	nodes := map[string]*served{}
	var kubelets []*refKubelet
	for _, p := range pairs {
		for _, node := range []string{p.agentNode, p.kubeletNode} {
			createNode(t, node, diffTTL)
			nodes[node] = &served{pods: map[string]*corev1.Pod{}}
			for _, pod := range differentialPods(ns, node) {
				created, err := clientset.CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{})
				if err != nil {
					t.Fatal(err)
				}
				nodes[node].pods[strings.TrimSuffix(pod.Name, "-"+node)] = created
			}
		}
		args := append([]string{"--sync-frequency=" + diffSync.String()}, p.agentArgs...)
		nodes[p.agentNode].rootDir = startAgentWith(t, p.agentNode, nodeKubeconfig(t, p.agentNode), args...).rootDir
		strategy := "Cache"
		if p.watch {
			strategy = "Watch"
		}
		kubelet := startRefKubelet(t, p.kubeletBuild, p.kubeletNode, strategy, diffSync, p.kubeletArgs...)
		nodes[p.kubeletNode].rootDir, kubelets = kubelet.rootDir, append(kubelets, kubelet)
	}

	// The files: every volume nodeagent serves, equal to the kubelet's.
	compareTrees := func(t *testing.T, p differentialPair) {
		t.Helper()
		agent, kubelet := nodes[p.agentNode], nodes[p.kubeletNode]
		compared := 0
		for base, kubeletPod := range kubelet.pods {
			agentPod := agent.pods[base]
			kubeletDirs, agentDirs := volumeDirs(kubelet.rootDir, kubeletPod), volumeDirs(agent.rootDir, agentPod)
			if len(kubeletDirs) != len(agentDirs) {
				t.Errorf("%s, pod %s: nodeagent has volumes %v, the kubelet %v", p.name, base, keys(agentDirs), keys(kubeletDirs))
			}
			for key, dir := range kubeletDirs {
				if agentDirs[key] == "" {
					continue
				}
				want := fileTree(t, dir)
				if key == "kubernetes.io~projected/kube-api-access" {
					dropServiceAccountToken(t, p.name+", pod "+base, want, fileTree(t, agentDirs[key]))
				}
				for _, d := range volumetree.Diff(want, fileTree(t, agentDirs[key]), "kubelet", "nodeagent") {
					t.Errorf("%s, pod %s, volume %s: %s", p.name, base, key, d)
				}
				compared++
			}
		}
		// Nine volumes of the pods' own, and one service-account volume
		// for each of the seven pods still running.
		if want := 9 + len(kubelet.pods); compared != want {
			t.Errorf("%s: compared %d volumes, want %d", p.name, compared, want)
		}
	}
	waitForTrees := func(t *testing.T, what string, ready func(dir string, tree volumetree.Tree, pod *corev1.Pod, key string) bool) {
		t.Helper()
		testutil.Eventually(t, pollInterval, 90*time.Second, func() error {
			for node, s := range nodes {
				for base, pod := range s.pods {
					dirs := volumeDirs(s.rootDir, pod)
					if len(dirs) == 0 {
						return fmt.Errorf("%s: pod %s has no volumes on disk yet", node, base)
					}
					for key, dir := range dirs {
						// A writer may be switching generations under the walk.
						tree, err := volumetree.Read(dir)
						if err != nil {
							return err
						}
						if !ready(dir, tree, pod, key) {
							return fmt.Errorf("%s: pod %s, volume %s: %s not yet", node, base, key, what)
						}
					}
				}
			}
			return nil
		})
	}
	waitForTrees(t, "mounted", func(_ string, tree volumetree.Tree, _ *corev1.Pod, _ string) bool {
		_, mounted := tree["..data"]
		return mounted
	})
	t.Run("files after mount", func(t *testing.T) {
		for _, p := range pairs {
			compareTrees(t, p)
		}
	})
	t.Run("owners as the gate says", func(t *testing.T) {
		for _, p := range pairs {
			checkOwners(t, p, nodes[p.kubeletNode].rootDir, nodes[p.kubeletNode].pods)
		}
	})

	// The traffic: a steady window, with pod status churn throughout.
	time.Sleep(2 * diffSync)
	from := time.Now()
	var podSets []map[string]*corev1.Pod
	for _, s := range nodes {
		podSets = append(podSets, s.pods)
	}
	stopChurn := churnPodStatus(t, ns, podSets...)
	time.Sleep(diffWindow)
	stopChurn()
	to := time.Now()
	counts, err := auditlog.Count(cp.AuditLogPath(), from, to)
	if err != nil {
		t.Fatal(err)
	}
	sinceStart, err := auditlog.Count(cp.AuditLogPath(), started, to)
	if err != nil {
		t.Fatal(err)
	}
	gets, err := auditlog.Gets(cp.AuditLogPath(), from, to)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("requests", func(t *testing.T) {
		for _, k := range kubelets {
			if n := k.failedSyncs(t); n > 0 {
				t.Errorf("reference kubelet %s logged %d failed pod syncs: its requests are not its steady state", k.node, n)
			}
		}
		for _, p := range pairs {
			agent, kubelet := counts[nodeidentity.User(p.agentNode)], counts[nodeidentity.User(p.kubeletNode)]
			t.Logf("%s over %s: nodeagent %+v, kubelet %s %+v", p.name, to.Sub(from).Round(time.Second), agent, p.kubeletBuild, kubelet)
			if p.watch {
				// Deterministic: one watch per ConfigMap the node reads, the
				// same lists, and no GET at all.
				agentAll, kubeletAll := sinceStart[nodeidentity.User(p.agentNode)], sinceStart[nodeidentity.User(p.kubeletNode)]
				t.Logf("%s since the start: nodeagent %+v, kubelet %s %+v", p.name, agentAll, p.kubeletBuild, kubeletAll)
				if agentAll.Watches == 0 || agentAll.Watches != kubeletAll.Watches {
					t.Errorf("%s: watches opened: nodeagent %d, kubelet %d", p.name, agentAll.Watches, kubeletAll.Watches)
				}
				if agentAll.QuorumLists+agentAll.CacheLists != kubeletAll.QuorumLists+kubeletAll.CacheLists {
					t.Errorf("%s: lists: nodeagent %+v, kubelet %+v", p.name, agentAll, kubeletAll)
				}
				if agent.Gets() != 0 || kubelet.Gets() != 0 {
					t.Errorf("%s: GETs in the window: nodeagent %d, kubelet %d; want none", p.name, agent.Gets(), kubelet.Gets())
				}
				continue
			}
			within10 := func(what string, a, k int) {
				if math.Abs(float64(a-k)) > 0.1*float64(k) {
					t.Errorf("%s: %s: nodeagent %d, kubelet %d: more than 10%% apart", p.name, what, a, k)
				}
			}
			if p.everySync {
				// Per ConfigMap and sync burst: how many bursts is the
				// pods' chance (quorumBursts), what one burst sends is not.
				agentBursts, kubeletBursts := quorumBursts(gets, nodeidentity.User(p.agentNode)), quorumBursts(gets, nodeidentity.User(p.kubeletNode))
				t.Logf("%s, quorum GETs by ConfigMap: nodeagent %s; kubelet %s", p.name, formatBursts(agentBursts), formatBursts(kubeletBursts))
				for _, problem := range checkEverySyncBursts(agentBursts, kubeletBursts, differentialReaders, to.Sub(from).Seconds()/meanSyncPeriod(diffSync).Seconds()) {
					t.Errorf("%s: %s", p.name, problem)
				}
			} else {
				within10("quorum GETs", agent.QuorumGets, kubelet.QuorumGets)
			}
			// A cached entry refreshes every few syncs; a window's edges can
			// take one refresh more or less of each of the four entries
			// (three ConfigMaps and kube-root-ca.crt), on either side.
			if d := agent.CacheGets - kubelet.CacheGets; d > len(differentialReaders)+1 || -d > len(differentialReaders)+1 {
				within10("cached GETs (resourceVersion=0)", agent.CacheGets, kubelet.CacheGets)
			}
			within10("errors (404 of the missing optional ConfigMap)", agent.Errors, kubelet.Errors)
			// Deterministic: the Cache strategy never lists or watches.
			if agent.Watches != 0 || kubelet.Watches != 0 || agent.QuorumLists+agent.CacheLists != 0 || kubelet.QuorumLists+kubelet.CacheLists != 0 {
				t.Errorf("%s: lists or watches with the Cache strategy: nodeagent %+v, kubelet %+v", p.name, agent, kubelet)
			}
		}
	})

	// An update, then a key removed: both reach the same files.
	updateConfigMap(t, ns, "diff-shared", "greeting", "updated")
	waitForTrees(t, "the update", func(dir string, _ volumetree.Tree, pod *corev1.Pod, key string) bool {
		data, _ := os.ReadFile(filepath.Join(dir, "greeting"))
		return !usesConfigMap(pod, key, "diff-shared") || strings.Contains(string(data), "updated")
	})
	t.Run("files after an update", func(t *testing.T) {
		for _, p := range pairs {
			compareTrees(t, p)
		}
	})
	removeConfigMapKey(t, ns, "diff-shared", "farewell")
	waitForTrees(t, "the key's removal", func(_ string, tree volumetree.Tree, pod *corev1.Pod, key string) bool {
		_, still := tree["farewell"]
		return !usesConfigMap(pod, key, "diff-shared") || !still
	})
	t.Run("files after a key is removed", func(t *testing.T) {
		for _, p := range pairs {
			compareTrees(t, p)
		}
	})

	// A pod deleted: both remove its volumes.
	t.Run("pod deleted", func(t *testing.T) {
		for node, s := range nodes {
			pod := s.pods["shared-b"]
			dirs := volumeDirs(s.rootDir, pod)
			deletePodNow(t, pod)
			testutil.Eventually(t, pollInterval, 90*time.Second, func() error {
				if left := volumeDirs(s.rootDir, pod); len(left) > 0 {
					return fmt.Errorf("%s: volumes %v of the deleted pod are still on disk (had %v)", node, keys(left), keys(dirs))
				}
				return nil
			})
		}
	})
}

// usesConfigMap reports whether the volume that key names (PLUGIN/VOLUME,
// as volumeDirs keys it) is one of pod's ConfigMap volumes of name: the
// volumes an update to that ConfigMap must reach, whatever they are called.
func usesConfigMap(pod *corev1.Pod, key, name string) bool {
	volume := key[strings.LastIndex(key, "/")+1:]
	for _, v := range pod.Spec.Volumes {
		if v.Name == volume {
			return v.ConfigMap != nil && v.ConfigMap.Name == name
		}
	}
	return false
}

// dropServiceAccountToken is the deliberate difference of the
// service-account volume: nodeagent does not serve serviceAccountToken
// sources (docs/kubelet-behaviour.md, "The volume on disk"). The kubelet
// writes the token; nodeagent must not. The token's entries are then left
// out of the comparison.
func dropServiceAccountToken(t *testing.T, where string, kubelet, agent volumetree.Tree) {
	t.Helper()
	if _, ok := kubelet[volumetree.Generation+"/token"]; !ok {
		t.Errorf("%s: the kubelet wrote no service-account token; the comparison would not test the difference", where)
	}
	for _, path := range []string{"token", volumetree.Generation + "/token"} {
		if _, ok := agent[path]; ok {
			t.Errorf("%s: nodeagent wrote %s, a serviceAccountToken source it does not serve", where, path)
		}
		delete(kubelet, path)
	}
}

// churnPodStatus adds and changes a condition on every pod every few
// seconds until stopped: status-only updates, which sync no pod in the
// kubelet nor in nodeagent.
func churnPodStatus(t *testing.T, ns string, podSets ...map[string]*corev1.Pod) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; ctx.Err() == nil; i++ {
			for _, pods := range podSets {
				for _, pod := range pods {
					patch := fmt.Sprintf(`{"status":{"conditions":[{"type":"example.com/Churn","status":"True","reason":"Round%d"}]}}`, i)
					_, _ = clientset.CoreV1().Pods(ns).Patch(ctx, pod.Name, "application/strategic-merge-patch+json", []byte(patch), metav1.PatchOptions{}, "status")
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(3 * time.Second):
			}
		}
	})
	return func() { cancel(); wg.Wait() }
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
