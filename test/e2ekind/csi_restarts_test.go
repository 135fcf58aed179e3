//go:build e2e

package e2ekind

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodeagent-io/nodeagent/pkg/report"
	"github.com/nodeagent-io/nodeagent/test/e2eutil"
)

// The days nobody plans, each run beside restartConfigMaps ConfigMaps and
// restartSecrets Secrets updated at random (a Poisson process each, as in
// TestCSIDriver) with every pod's files read from the host as they change.
const (
	restartConfigMaps = 6
	restartSecrets    = 3
	restartMeanGap    = 1400 * time.Millisecond
	// restartCurrent is how soon after the driver's return every volume
	// must hold every update sent before it.
	restartCurrent = time.Second
	// csiNodeLabel selects the nodes the driver runs on in these tests:
	// taking it off a node stops the driver there alone (no rollout).
	csiNodeLabel = "e2e.nodeagent.io/csi"
	// restartSettle is how long the updates run before a disruption and
	// after its return.
	restartSettle = 5 * time.Second
)

// TestCSIDriverRestarts holds the driver to what operators judge a CSI
// driver by on the days nobody plans: its rolling upgrade, its kubelet
// restarted, the driver down while pods on its node are deleted and
// created (one of them with a record that cannot be read), and its node
// restarted. The driver runs in the Secrets mode, reading as the pods and
// keeping their tokens on the node's tmpfs (csi.tokenDir), so that a
// restarted driver opens its watches at once. It restarts a kubelet and a
// node, so it runs before the parallel tests. Each scenario's figures go
// to _output/e2e-kind/csi-restarts.json, a row per node.
func TestCSIDriverRestarts(t *testing.T) {
	nodes := clusterNodes(t)
	for _, node := range nodes {
		labelNode(t, node, "on")
	}
	t.Cleanup(func() {
		for _, node := range nodes {
			labelNode(t, node, "")
		}
	})
	installCSIDriver(t, "--set-string", `nodeSelector.e2e\.nodeagent\.io/csi=on`, "--set", "csi.secrets.enabled=true")
	table := report.Table{Header: []string{"scenario", "node", "driver not ready", "longest delay of an update sent meanwhile",
		"updates sent", "every volume current, after the return", "longest delay after the return"}}
	t.Run("rolling upgrade", func(t *testing.T) { table.Rows = append(table.Rows, csiRollingUpgrade(t)...) })
	t.Run("kubelet restarted", func(t *testing.T) { table.Rows = append(table.Rows, csiKubeletRestarted(t)...) })
	t.Run("driver down while pods come and go", func(t *testing.T) { table.Rows = append(table.Rows, csiDownWhilePodsChange(t)...) })
	t.Run("node restarted", func(t *testing.T) { table.Rows = append(table.Rows, csiNodeRestarted(t)...) })
	writeDocTable(t, "csi-restarts", table)
}

// labelNode sets csiNodeLabel on node to value, or removes it where value
// is "".
func labelNode(t *testing.T, node, value string) {
	t.Helper()
	if err := patchLabel(clientset.CoreV1().Nodes(), node, csiNodeLabel, value); err != nil {
		t.Fatal(err)
	}
}

// patchLabel sets key=value on the object name, or removes key where value
// is "", with a merge patch.
func patchLabel[T any](client interface {
	Patch(context.Context, string, types.PatchType, []byte, metav1.PatchOptions, ...string) (T, error)
}, name, key, value string) error {
	var v any = value
	if value == "" {
		v = nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]any{key: v}}})
	if err == nil {
		_, err = client.Patch(context.Background(), name, types.MergePatchType, patch, metav1.PatchOptions{})
	}
	if err != nil {
		return fmt.Errorf("label %s=%q on %s: %w", key, value, name, err)
	}
	return nil
}

// restartWorkload is what a scenario runs beside: on each worker,
// two pods mounting every ConfigMap and every Secret through the driver,
// read as the namespace's default service account, which may read them.
type restartWorkload struct {
	ns                  string
	configMaps, secrets []string
	pods                []*corev1.Pod
	// servedAgain is, by node, when the kubelet had published the volumes
	// again where that comes after the driver's return (a node restarted):
	// what a volume's being current is judged from there.
	servedAgain map[string]time.Time
}

func newRestartWorkload(t *testing.T, prefix string) *restartWorkload {
	t.Helper()
	w := &restartWorkload{ns: testNamespace(t, prefix)}
	t.Cleanup(func() { deletePods(t, w.ns) })
	attrs := map[string]map[string]string{}
	for i := range restartConfigMaps {
		name := fmt.Sprintf("cfg-%d", i)
		w.configMaps = append(w.configMaps, name)
		attrs[name] = map[string]string{"configMap": name}
		mustCreate(t, w.ns, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{e2eutil.DelayValueKey: "0"}})
	}
	for i := range restartSecrets {
		name := fmt.Sprintf("sec-%d", i)
		w.secrets = append(w.secrets, name)
		attrs[name] = map[string]string{"secret": name}
		mustCreate(t, w.ns, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string][]byte{e2eutil.DelayValueKey: []byte("0")}})
	}
	e2eutil.GrantReads(t, clientset, w.ns, "default", "configmaps", w.configMaps...)
	e2eutil.GrantReads(t, clientset, w.ns, "default", "secrets", w.secrets...)
	var names []string
	for _, node := range clusterNodes(t)[1:] {
		for i := range 2 {
			name := fmt.Sprintf("keep-%s-%d", node, i)
			mustCreate(t, w.ns, csiPod(name, node, attrs))
			names = append(names, name)
		}
	}
	for _, name := range names {
		w.pods = append(w.pods, waitRunning(t, w.ns, name))
	}
	return w
}

// restartFiles are the files a run around a disruption reads, grouped by
// node: of the ConfigMaps and of the Secrets.
type restartFiles struct {
	configMaps, secrets []e2eutil.DelayFile
}

// files are every pod's file of every ConfigMap and Secret, read through
// its container's root.
func (w *restartWorkload) files(t *testing.T) restartFiles {
	var files restartFiles
	for _, pod := range w.pods {
		root := viewContainer(t, pod).rootFromHost(t)
		for i, cm := range w.configMaps {
			files.configMaps = append(files.configMaps, e2eutil.DelayFile{Group: pod.Spec.NodeName, Object: i, Path: filepath.Join(root, "mnt", cm, e2eutil.DelayValueKey)})
		}
		for i, secret := range w.secrets {
			files.secrets = append(files.secrets, e2eutil.DelayFile{Group: pod.Spec.NodeName, Object: i, Path: filepath.Join(root, "mnt", secret, e2eutil.DelayValueKey)})
		}
	}
	return files
}

// runs are the workload's two delay runs, of its ConfigMaps and of its
// Secrets, until stop.
func (w *restartWorkload) runs(stop <-chan struct{}) []e2eutil.DelayRun {
	configMaps := e2eutil.DelayRun{Client: clientset, Namespace: w.ns, Objects: w.configMaps,
		MeanGap: restartMeanGap, Poll: csiPoll, Longest: 2 * time.Minute, Stop: stop}
	secrets := configMaps
	secrets.Objects, secrets.Secrets = w.secrets, true
	return []e2eutil.DelayRun{configMaps, secrets}
}

// checkUndisturbed requires every pod of the workload to be the same pod,
// running, its container never restarted.
func (w *restartWorkload) checkUndisturbed(t *testing.T) {
	t.Helper()
	for _, before := range w.pods {
		pod, err := clientset.CoreV1().Pods(w.ns).Get(context.Background(), before.Name, metav1.GetOptions{})
		switch {
		case err != nil:
			t.Errorf("pod %s: %v", before.Name, err)
		case pod.UID != before.UID || pod.DeletionTimestamp != nil:
			t.Errorf("pod %s was replaced or is terminating", before.Name)
		case len(pod.Status.ContainerStatuses) == 0 || pod.Status.ContainerStatuses[0].State.Running == nil ||
			pod.Status.ContainerStatuses[0].RestartCount != 0:
			t.Errorf("pod %s disturbed: %+v", before.Name, pod.Status.ContainerStatuses)
		}
	}
}

// around runs the workload's updates while disrupt runs (on the test's
// goroutine, once the updates are under way) and for restartSettle after,
// and returns disrupt's outage starts and returns by node, with the meters
// of every arrival, of the ConfigMaps and of the Secrets. Every update
// must reach every file (the run fails otherwise).
func (w *restartWorkload) around(t *testing.T, disrupt func() (outages, returns map[string]time.Time)) ([]*e2eutil.DelayMeter, map[string]time.Time, map[string]time.Time) {
	t.Helper()
	return w.aroundFiles(t, w.files(t), disrupt)
}

// aroundFiles is around, reading files; a kind of object without files
// is not updated.
func (w *restartWorkload) aroundFiles(t *testing.T, files restartFiles, disrupt func() (outages, returns map[string]time.Time)) ([]*e2eutil.DelayMeter, map[string]time.Time, map[string]time.Time) {
	t.Helper()
	stop := make(chan struct{})
	runs := w.runs(stop)
	meters := make([]*e2eutil.DelayMeter, 2)
	var g errgroup.Group
	for i, kindFiles := range [][]e2eutil.DelayFile{files.configMaps, files.secrets} {
		if len(kindFiles) == 0 {
			continue
		}
		g.Go(func() (err error) {
			meters[i], err = runs[i].MeasureMeter(context.Background(), kindFiles)
			return err
		})
	}
	time.Sleep(restartSettle)
	outages, returns := disrupt()
	time.Sleep(restartSettle)
	close(stop)
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	return slices.DeleteFunc(meters, func(m *e2eutil.DelayMeter) bool { return m == nil }), outages, returns
}

// restartRows judges each node's return: every update sent before it in
// every file within restartCurrent of it, or of servedAgain where that
// comes later, and the row of the docs' table: how
// long the driver was not ready, the longest delay of an update sent while
// it was not (how long the volumes really went without updates), how long
// after the return the last of those arrived (0 when before it: a driver
// serves its recorded volumes before it registers), and the longest delay
// after the return.
func (w *restartWorkload) restartRows(t *testing.T, scenario string, meters []*e2eutil.DelayMeter, outages, returns map[string]time.Time) [][]string {
	t.Helper()
	updates := 0
	for _, run := range w.runs(nil)[:len(meters)] {
		updates += run.Sent(t)
	}
	var rows [][]string
	for _, node := range slices.Sorted(maps.Keys(returns)) {
		var arrivals []e2eutil.Arrival
		for _, m := range meters {
			arrivals = append(arrivals, m.Arrivals(node)...)
		}
		if len(arrivals) == 0 {
			continue // no pod of the workload there
		}
		back, stopped := returns[node], outages[node]
		if stopped.IsZero() {
			stopped = back
		}
		served := later(back, w.servedAgain[node])
		var current, during, after time.Duration
		for _, a := range arrivals {
			switch {
			case a.Sent.After(back):
				after = max(after, a.Seen.Sub(a.Sent))
			case a.Sent.After(stopped):
				during = max(during, a.Seen.Sub(a.Sent))
				fallthrough
			default:
				current = max(current, a.Seen.Sub(served))
			}
		}
		if current > restartCurrent {
			t.Errorf("%s: the last volume was current %s after the return (the driver's, or the kubelet's publish calls after a node restart), want within %s",
				node, current.Round(time.Millisecond), restartCurrent)
		}
		t.Logf("%s: not ready %s; updates sent meanwhile took up to %s; current %s after the return; after it, delays up to %s (%d arrivals)",
			node, back.Sub(stopped).Round(time.Millisecond), during.Round(time.Millisecond), current.Round(time.Millisecond),
			after.Round(time.Millisecond), len(arrivals))
		notReady, meanwhile := "never", "–"
		if back.After(stopped) {
			notReady, meanwhile = seconds(back.Sub(stopped).Seconds()), seconds(during.Seconds())
		}
		rows = append(rows, []string{scenario, node, notReady, meanwhile, strconv.Itoa(updates),
			seconds(current.Seconds()), seconds(after.Seconds())})
	}
	return rows
}
