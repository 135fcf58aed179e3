//go:build e2e

package e2ekind

import (
	"context"
	"fmt"
	"maps"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/nodeagent-io/nodeagent/pkg/analyze"
	"github.com/nodeagent-io/nodeagent/pkg/model"
	"github.com/nodeagent-io/nodeagent/pkg/report"
	"github.com/nodeagent-io/nodeagent/pkg/ttl"
	"github.com/nodeagent-io/nodeagent/test/e2eutil"
)

const (
	// delayPods pods on each of the two workers mount every one of
	// delayConfigMaps ConfigMaps, each updated every delayMeanGap on
	// average over delayWindow: about 100 updates, each reaching
	// delayPods volumes per node.
	delayPods, delayConfigMaps = 4, 6
	delayWindow                = 90 * time.Second
	delayMeanGap               = 5 * time.Second
	// delaySync is the workers' sync frequency, shortened so that the test
	// stays short; delayTTL the Cache worker's TTL.
	delaySync = 2 * time.Second
	delayTTL  = 10 * time.Second
	// delayPoll is how often the containers' files are read.
	delayPoll = 50 * time.Millisecond
)

// TestUpdateDelayInContainers measures how long a ConfigMap update takes to
// reach real containers on kind: one worker's kubelet on Watch (its default),
// the other's on Cache with a TTL of 10 s (the TTL controller is off on this
// cluster, deploy/kind/cluster.yaml, so the test sets it), both syncing every
// 2 s. Several rounds of updates at random times; each container's file is
// read from the host through the container's own root (/proc/PID/root)
// until it holds the new value. Then `nodeagent analyze` predicts the two
// nodes' delays, and every measured delay must be within the node's
// predicted longest and the measured median within 25 % of the predicted
// median. The figures are written to _output/e2e-kind/update-delay.json.
func TestUpdateDelayInContainers(t *testing.T) {
	ctx := context.Background()
	nodes := clusterNodes(t)
	watchNode, cacheNode := nodes[1], nodes[2] // the two workers
	setKubeletConfigUntilCleanup(t, watchNode, map[string]string{"syncFrequency": delaySync.String()})
	setKubeletConfigUntilCleanup(t, cacheNode, map[string]string{
		"configMapAndSecretChangeDetectionStrategy": "Cache", "syncFrequency": delaySync.String()})
	setNodeTTL(t, cacheNode, delayTTL)
	waitNodesReady(t, []string{watchNode, cacheNode})

	ns := testNamespace(t, "e2e-kind-delay")
	t.Cleanup(func() { deletePods(t, ns) })
	var names []string
	var volumes []corev1.Volume
	var mounts []corev1.VolumeMount
	for i := range delayConfigMaps {
		name := fmt.Sprintf("cfg-%d", i)
		names = append(names, name)
		_, err := clientset.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name},
			Data: map[string]string{e2eutil.DelayValueKey: "0"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		volumes = append(volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: name}}}})
		mounts = append(mounts, corev1.VolumeMount{Name: name, MountPath: "/etc/" + name})
	}
	// Pods half a second apart, each on a sync tick of its own.
	var created []string
	for i := range delayPods {
		for _, node := range []string{watchNode, cacheNode} {
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", node, i)},
				Spec: corev1.PodSpec{NodeName: node, Volumes: volumes, TerminationGracePeriodSeconds: ptr.To[int64](1),
					Containers: []corev1.Container{{Name: "app", Image: podImage, VolumeMounts: mounts}}},
			}
			if _, err := clientset.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			created = append(created, pod.Name)
		}
		time.Sleep(delaySync / 4)
	}
	var files []e2eutil.DelayFile
	for _, name := range created {
		var pod *corev1.Pod
		eventually(t, 3*time.Minute, "pod "+name+" running", func() string {
			p, err := clientset.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err.Error()
			}
			if len(p.Status.ContainerStatuses) == 0 || p.Status.ContainerStatuses[0].State.Running == nil {
				return fmt.Sprintf("%s is %s", p.Name, p.Status.Phase)
			}
			pod = p
			return ""
		})
		root := viewContainer(t, pod).rootFromHost(t)
		for i, cm := range names {
			files = append(files, e2eutil.DelayFile{Group: pod.Spec.NodeName, Object: i, Path: filepath.Join(root, "etc", cm, e2eutil.DelayValueKey)})
		}
	}
	for _, f := range files {
		if data, err := os.ReadFile(f.Path); err != nil || string(data) != "0" {
			t.Fatalf("reading a container's file from the host (%s): %q, %v", f.Path, data, err)
		}
	}
	time.Sleep(3 * delaySync) // every pod past its first syncs

	run := e2eutil.DelayRun{Client: clientset, Namespace: ns, Objects: names,
		Window: delayWindow, MeanGap: delayMeanGap, Poll: delayPoll, Longest: delayTTL + 2*delaySync + 10*time.Second}
	delays, notified, err := run.Measure(ctx, files)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range slices.Sorted(maps.Keys(notified)) {
		t.Logf("%s: %.0f %% of the delays measured by a read that inotify prompted, the rest by the %s poll", key, 100*notified[key], run.Poll)
	}
	r := runAnalyze(t, "analyze-delay", "--node-selector=kubernetes.io/hostname in ("+watchNode+","+cacheNode+")")
	if len(r.Nodes) != 2 {
		t.Fatalf("analyze saw %d nodes, want the two workers", len(r.Nodes))
	}
	writeDocTable(t, "update-delay", checkUpdateDelays(t, r.Nodes, delays, delayPoll))
}

// setNodeTTL annotates a node with the TTL its kubelet's Cache keeps
// objects for, and puts back 0, what hack/e2e-kind.sh gives every node,
// when the test ends.
func setNodeTTL(t *testing.T, node string, d time.Duration) {
	t.Helper()
	patch := func(seconds int) {
		t.Helper()
		body := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, ttl.Annotation, strconv.Itoa(seconds))
		if _, err := clientset.CoreV1().Nodes().Patch(context.Background(), node, "application/merge-patch+json", []byte(body), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	patch(int(d.Seconds()))
	t.Cleanup(func() { patch(0) })
}

// rootFromHost is the container's root file system as this process sees
// it: the node's /proc through the node container's own root. Reading it
// needs root on the Docker host, which make e2e-kind has.
func (c containerView) rootFromHost(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("docker", "inspect", "-f", "{{.State.Pid}}", c.node).Output()
	if err != nil {
		t.Fatalf("docker inspect %s: %v", c.node, err)
	}
	return filepath.Join("/proc", strings.TrimSpace(string(out)), "root/proc", c.pid, "root")
}

// checkUpdateDelays requires, for each node analyze reported, every
// measured delay within its predicted longest (to within one poll, the
// measurement's resolution) and the measured median within 25 % of the
// predicted median; it logs both and returns them as a table, one row
// per node, for the docs.
func checkUpdateDelays(t testing.TB, nodes []analyze.NodeResult, measured map[string][]float64, poll time.Duration) report.Table {
	t.Helper()
	table := report.Table{Header: []string{"node", "behaviour", "S", "T", "delays measured", "median", "predicted median", "longest", "predicted longest"}}
	for _, n := range nodes {
		delays := slices.Clone(measured[n.Name])
		if n.UpdateDelay == nil || len(delays) == 0 || n.SettingsSource != analyze.FromConfigz {
			t.Errorf("%s: predicted delay %v from %s settings, %d measured", n.Name, n.UpdateDelay, n.SettingsSource, len(delays))
			continue
		}
		slices.Sort(delays)
		median, longest := model.Quantile(delays, 0.5), delays[len(delays)-1]
		line := fmt.Sprintf("%s (%s, S = %gs, T = %gs): %d delays measured, median %.2f s, longest %.2f s; predicted median %.2f s, longest %.2f s",
			n.Name, n.Behaviour, n.SyncFrequencySeconds, n.TTLSeconds, len(delays), median, longest, n.UpdateDelay.Median, n.UpdateDelay.Max)
		t.Log(line)
		table.Rows = append(table.Rows, []string{n.Name, string(n.Behaviour), fmt.Sprintf("%g s", n.SyncFrequencySeconds), fmt.Sprintf("%g s", n.TTLSeconds),
			fmt.Sprint(len(delays)), fmt.Sprintf("%.2f s", median), fmt.Sprintf("%.2f s", n.UpdateDelay.Median),
			fmt.Sprintf("%.2f s", longest), fmt.Sprintf("%.2f s", n.UpdateDelay.Max)})
		if longest > n.UpdateDelay.Max+poll.Seconds() {
			t.Errorf("%s: an update took %.2f s, longer than the predicted longest %.2f s", n.Name, longest, n.UpdateDelay.Max)
		}
		if math.Abs(median-n.UpdateDelay.Median) > 0.25*n.UpdateDelay.Median {
			t.Errorf("%s: measured median %.2f s, more than 25 %% from the predicted %.2f s", n.Name, median, n.UpdateDelay.Median)
		}
	}
	return table
}
