//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeagent-io/nodeagent/internal/controlplane"
	"github.com/nodeagent-io/nodeagent/internal/testutil"
	"github.com/nodeagent-io/nodeagent/pkg/agent"
	"github.com/nodeagent-io/nodeagent/pkg/podrefs"
	"github.com/nodeagent-io/nodeagent/pkg/volumemanager/core"
)

// serviceAccountVolume returns the kube-api-access volume the admission
// plugin gave pod.
func serviceAccountVolume(t *testing.T, pod *corev1.Pod) string {
	t.Helper()
	for _, v := range pod.Spec.Volumes {
		if v.Projected != nil && len(v.Name) > len("kube-api-access-") && v.Name[:len("kube-api-access-")] == "kube-api-access-" {
			return v.Name
		}
	}
	t.Fatalf("pod %s has no kube-api-access volume: the ServiceAccount admission plugin did not run", pod.Name)
	return ""
}

func projectedPath(a *agentProcess, pod *corev1.Pod, volume, file string) string {
	return filepath.Join(podrefs.VolumeDir(a.rootDir, string(pod.UID), podrefs.PluginProjected, volume), file)
}

// The pod's kube-api-access volume, as the real admission plugin made it, is
// on disk with the kubelet's layout and modes: ca.crt from kube-root-ca.crt,
// namespace from the pod, no token (not nodeagent's to mint).
func TestServiceAccountVolumeOnDisk(t *testing.T) {
	ns := createNamespace(t, "sa-disk")
	createNode(t, "node-sa-disk", 0)
	a := startAgent(t, "node-sa-disk", "--sync-frequency=1s")
	pod := createPodWithServiceAccount(t, ns, "app", "node-sa-disk")
	volume := serviceAccountVolume(t, pod)

	rootCA, err := clientset.CoreV1().ConfigMaps(ns).Get(context.Background(), controlplane.RootCAConfigMap, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rootCA.Data["ca.crt"] == "" {
		t.Fatal("kube-root-ca.crt has no ca.crt")
	}
	a.waitForFile(projectedPath(a, pod, volume, "ca.crt"), rootCA.Data["ca.crt"], 30*time.Second)
	a.waitForFile(projectedPath(a, pod, volume, "namespace"), ns, 10*time.Second)

	dir := projectedPath(a, pod, volume, "")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var layout []string
	for _, e := range entries {
		name := e.Name()
		if target, err := os.Readlink(filepath.Join(dir, name)); err == nil {
			if name == "..data" {
				target = "..<generation>"
			}
			name += " -> " + target
		} else if len(name) > 2 && name[:2] == ".." {
			name = "..<generation>"
		}
		layout = append(layout, name)
	}
	sort.Strings(layout)
	want := []string{"..<generation>", "..data -> ..<generation>", "ca.crt -> ..data/ca.crt", "namespace -> ..data/namespace"}
	if fmt.Sprint(layout) != fmt.Sprint(want) {
		t.Errorf("layout %v, want %v", layout, want)
	}
	for path, mode := range map[string]os.FileMode{"": 0o777, "ca.crt": 0o644, "namespace": 0o644, "..data": 0o755} {
		info, err := os.Stat(filepath.Join(dir, path))
		if err != nil {
			t.Fatal(err)
		}
		if info.Mode().Perm() != mode {
			t.Errorf("%q: mode %o, want %o", path, info.Mode().Perm(), mode)
		}
	}

	// The files are on disk a moment before the volume is recorded as
	// mounted (the operation's end): poll.
	testutil.Eventually(t, pollInterval, 10*time.Second, func() error {
		var debug struct {
			Volumes []core.VolumeStatus `json:"volumes"`
		}
		resp, err := http.Get("http://" + a.httpAddr + "/debug/volumes")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if err := json.NewDecoder(resp.Body).Decode(&debug); err != nil {
			return err
		}
		if len(debug.Volumes) != 1 || fmt.Sprint(debug.Volumes[0].NotServed) != "[serviceAccountToken token]" ||
			fmt.Sprint(debug.Volumes[0].ConfigMaps) != "[kube-root-ca.crt]" {
			return fmt.Errorf("/debug/volumes: %+v; want the volume, its ConfigMap and the token listed as not served", debug.Volumes)
		}
		return nil
	})
}

// counts are the requests one agent made over a window, and what the
// apiserver and etcd saw meanwhile.
type counts struct {
	syncs, agentGets, agentQuorum, agentRV0, apiGets, etcdGets float64
}

func measure(t *testing.T, a *agentProcess, window time.Duration) counts {
	t.Helper()
	// A sync's GET comes with its remount, up to two reconciler passes
	// after it. Counting the syncs over [start, end] and the GETs over
	// [start+lag, end+lag] pairs every sync with its own GET, however
	// many pods come due in the same tick at either end of the window.
	const lag = 500 * time.Millisecond
	syncsBefore := a.metrics()
	time.Sleep(lag)
	getsBefore, apiBefore := a.metrics(), scrapeAPIServer(t)
	time.Sleep(window - lag)
	syncsAfter := a.metrics()
	time.Sleep(lag)
	getsAfter, apiAfter := a.metrics(), scrapeAPIServer(t)
	gets := func(labels map[string]string) float64 {
		return getsAfter.Sum(agent.MetricConfigMapGets, labels) - getsBefore.Sum(agent.MetricConfigMapGets, labels)
	}
	sync := map[string]string{"kind": "sync"}
	c := counts{
		syncs:       syncsAfter.Sum(agent.MetricPodWork, sync) - syncsBefore.Sum(agent.MetricPodWork, sync),
		agentGets:   gets(nil),
		agentQuorum: gets(map[string]string{"resource_version": "unset"}),
		agentRV0:    gets(map[string]string{"resource_version": "0"}),
		apiGets:     apiAfter.APIServerConfigMapGets() - apiBefore.APIServerConfigMapGets(),
		etcdGets:    apiAfter.EtcdConfigMapGets() - apiBefore.EtcdConfigMapGets(),
	}
	t.Logf("over %s: %v pod syncs; agent GETs %v (quorum %v, resourceVersion 0: %v); apiserver GETs %v; etcd gets %v",
		window, c.syncs, c.agentGets, c.agentQuorum, c.agentRV0, c.apiGets, c.etcdGets)
	return c
}

// Requests in flight at a scrape can land on either side of it; and
// etcd's count holds the control plane's own ConfigMap reads (about one a
// minute) beside the agent's.
const countSlack = 1

// othersSlack bounds the other tests' ConfigMap reads that the apiserver's
// and etcd's counters hold beside an agent's over a window of seconds.
const othersSlack = 3

// The service-account volume's ConfigMap costs what the kubelet's costs:
// before #120255 one quorum GET of kube-root-ca.crt per pod sync, after it
// one resourceVersion=0 refresh per node and namespace per TTL period.
func TestServiceAccountVolumeLoad(t *testing.T) {
	t.Run("every-sync", func(t *testing.T) {
		// Two namespaces: two kube-root-ca.crt entries, never shared, so
		// every sync of either pod is one quorum GET.
		createNode(t, "node-sa-every-sync", 300)
		a := startAgent(t, "node-sa-every-sync", "--sync-frequency=1s", "--cache-invalidation=every-sync")
		var pods []*corev1.Pod
		for i := range 2 {
			ns := createNamespace(t, fmt.Sprintf("sa-every-sync-%d", i))
			pods = append(pods, createPodWithServiceAccount(t, ns, "app", "node-sa-every-sync"))
		}
		for _, p := range pods {
			a.waitForFile(projectedPath(a, p, serviceAccountVolume(t, p), "namespace"), p.Namespace, 30*time.Second)
		}
		// A pod's first sync mounts, and is counted after its GET: start
		// once both pods are past it.
		testutil.Eventually(t, pollInterval, 30*time.Second, func() error {
			if synced := a.metrics().Sum(agent.MetricPodWork, map[string]string{"kind": "sync"}); synced < float64(2*len(pods)) {
				return fmt.Errorf("%v pod syncs, want the second of each pod", synced)
			}
			return nil
		})
		// Two pods synced every 1 to 2.5 s: at least six syncs in 8 s. A
		// remount that the loaded machine (make test runs the unit tests
		// beside) delays past measure's lag pairs a sync with the window's
		// other side: at most one per pod.
		c := measure(t, a, 8*time.Second)
		// The apiserver and etcd also count the reads of the tests beside
		// this one on the shared control plane: they only add.
		if c.syncs < 6 || math.Abs(c.agentQuorum-c.syncs) > float64(len(pods)) ||
			c.apiGets < c.agentGets-countSlack || c.apiGets > c.agentGets+othersSlack ||
			c.etcdGets < c.agentQuorum-countSlack || c.etcdGets > c.agentQuorum+othersSlack || c.agentRV0 != 0 {
			t.Errorf("every-sync: %v pod syncs, %v quorum GETs by the agent, %v apiserver GETs, %v etcd reads, %v at resourceVersion 0; want one quorum GET per sync",
				c.syncs, c.agentQuorum, c.apiGets, c.etcdGets, c.agentRV0)
		}
	})
	t.Run("first-reference", func(t *testing.T) {
		// Three pods of one namespace share one entry, refreshed once
		// per TTL period plus the wait for the next remount.
		const ttl, window = 3 * time.Second, 15 * time.Second
		ns := createNamespace(t, "sa-first-reference")
		createNode(t, "node-sa-first-reference", int(ttl/time.Second))
		a := startAgent(t, "node-sa-first-reference", "--sync-frequency=1s", "--cache-invalidation=first-reference")
		var pods []*corev1.Pod
		for i := range 3 {
			pods = append(pods, createPodWithServiceAccount(t, ns, fmt.Sprintf("app-%d", i), "node-sa-first-reference"))
		}
		for _, p := range pods {
			a.waitForFile(projectedPath(a, p, serviceAccountVolume(t, p), "namespace"), ns, 30*time.Second)
		}
		c := measure(t, a, window)
		// A refresh comes at most once per T and at least once per T plus
		// the longest sync interval (1.5 s + the 1 s tick).
		lo, hi := math.Floor(window.Seconds()/(ttl.Seconds()+2.5))-1, math.Ceil(window.Seconds()/ttl.Seconds())+1
		if c.agentRV0 < lo || c.agentRV0 > hi || c.agentQuorum != 0 || c.etcdGets > 2*countSlack {
			t.Errorf("first-reference, T=%s over %s: %v refreshes at resourceVersion 0 (want %v..%v), %v quorum GETs, %v etcd reads (want 0)",
				ttl, window, c.agentRV0, lo, hi, c.agentQuorum, c.etcdGets)
		}
		if math.Abs(c.apiGets-c.agentGets) > countSlack {
			t.Errorf("agent counted %v GETs, apiserver %v", c.agentGets, c.apiGets)
		}
	})
}

// The kubelet does not sync a pod for a change of its status: 100 status
// updates of a synced pod cost no sync and no GET, even before #120255. A
// label change, which does sync, shows the test can see a sync.
func TestStatusOnlyUpdatesDoNotSync(t *testing.T) {
	ns := createNamespace(t, "status")
	createNode(t, "node-status", 300)
	// S = 10 min: no periodic sync falls in the test.
	a := startAgent(t, "node-status", "--sync-frequency=10m", "--cache-invalidation=every-sync")
	createConfigMap(t, ns, "cfg", map[string]string{"k": "v"})
	pod := createPodWithServiceAccount(t, ns, "app", "node-status", volume{name: "cfg", configMap: "cfg"})
	a.waitForFile(a.volumePath(pod, "cfg", "k"), "v", 30*time.Second)
	time.Sleep(time.Second) // the first sync's own updates settle

	agentBefore, apiBefore := a.metrics(), scrapeAPIServer(t)
	current := pod
	for i := range 100 {
		current.Status.Conditions = []corev1.PodCondition{{
			Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "Probing", Message: fmt.Sprintf("probe %d", i),
		}}
		updated, err := clientset.CoreV1().Pods(ns).UpdateStatus(context.Background(), current, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		current = updated
	}
	testutil.Eventually(t, pollInterval, 10*time.Second, func() error {
		if seen := a.metrics().Sum(agent.MetricPodUpdates, map[string]string{"change": "status-only"}) -
			agentBefore.Sum(agent.MetricPodUpdates, map[string]string{"change": "status-only"}); seen < 100 {
			return fmt.Errorf("the agent has seen %v of the 100 status updates", seen)
		}
		return nil
	})
	agentAfter, apiAfter := a.metrics(), scrapeAPIServer(t)
	syncs := agentAfter.Sum(agent.MetricPodWork, map[string]string{"kind": "sync"}) - agentBefore.Sum(agent.MetricPodWork, map[string]string{"kind": "sync"})
	gets := agentAfter.Sum(agent.MetricConfigMapGets, nil) - agentBefore.Sum(agent.MetricConfigMapGets, nil)
	apiGets := apiAfter.APIServerConfigMapGets() - apiBefore.APIServerConfigMapGets()
	if syncs != 0 || gets != 0 || apiGets > countSlack {
		t.Errorf("100 status-only updates: %v syncs, %v agent GETs, %v apiserver GETs; want none", syncs, gets, apiGets)
	}

	// A label change syncs the pod once: one quorum GET per ConfigMap.
	current.Labels = map[string]string{"changed": "yes"}
	if _, err := clientset.CoreV1().Pods(ns).Update(context.Background(), current, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, pollInterval, 10*time.Second, func() error {
		if s := a.metrics().Sum(agent.MetricPodWork, map[string]string{"kind": "sync"}) - agentAfter.Sum(agent.MetricPodWork, map[string]string{"kind": "sync"}); s != 1 {
			return fmt.Errorf("%v syncs after a label change, want 1", s)
		}
		return nil
	})
	testutil.Eventually(t, pollInterval, 10*time.Second, func() error {
		if g := a.metrics().Sum(agent.MetricConfigMapGets, map[string]string{"resource_version": "unset"}) -
			agentAfter.Sum(agent.MetricConfigMapGets, map[string]string{"resource_version": "unset"}); g != 2 {
			return fmt.Errorf("%v quorum GETs after the label change's sync, want 2 (cfg and kube-root-ca.crt)", g)
		}
		return nil
	})
}

// A ConfigMap that only a container's environment uses is read once, when
// the pod's containers would start, and never again, however often the pod
// syncs; with the watch strategy it holds one watch and sends no GET.
func TestEnvOnlyConfigMapIsReadOnce(t *testing.T) {
	ns := createNamespace(t, "env")
	createNode(t, "node-env", 0)
	a := startAgent(t, "node-env", "--sync-frequency=1s", "--cache-invalidation=every-sync")
	createConfigMap(t, ns, "settings", map[string]string{"LEVEL": "debug"})
	before := scrapeAPIServer(t)
	agentBefore := a.metrics()

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"},
		Spec: corev1.PodSpec{
			NodeName:                     "node-env",
			AutomountServiceAccountToken: new(bool),
			Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10", EnvFrom: []corev1.EnvFromSource{{
				ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}},
			}}}},
		},
	}
	if _, err := clientset.CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, pollInterval, 30*time.Second, func() error {
		if s := a.metrics().Sum(agent.MetricPodWork, map[string]string{"kind": "sync", "result": "success"}) -
			agentBefore.Sum(agent.MetricPodWork, map[string]string{"kind": "sync", "result": "success"}); s < 6 {
			return fmt.Errorf("%v successful syncs so far", s)
		}
		return nil
	})
	after, agentAfter := scrapeAPIServer(t), a.metrics()
	gets := agentAfter.Sum(agent.MetricConfigMapGets, nil) - agentBefore.Sum(agent.MetricConfigMapGets, nil)
	apiGets := after.APIServerConfigMapGets() - before.APIServerConfigMapGets()
	if gets != 1 || math.Abs(apiGets-1) > countSlack {
		t.Errorf("an env-only ConfigMap over 6 syncs: %v agent GETs, %v apiserver GETs; want 1 (the first sync's)", gets, apiGets)
	}
}
