//go:build e2e

package e2ekind

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nodeagent-io/nodeagent/test/e2eutil"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// driverPod is the driver's pod on a node as a restart scenario follows it.
type driverPod struct {
	Name, Container string
	// Ready: its container is ready and the pod is not terminating.
	Ready bool
}

// readyName is the pod's name when it is ready, else "".
func (p driverPod) readyName() string {
	if p.Ready {
		return p.Name
	}
	return ""
}

// driverPods lists the driver's pods by node, a ready one where a node has
// one besides a terminating one.
func driverPods(ctx context.Context) (map[string]driverPod, error) {
	list, err := clientset.CoreV1().Pods(csiNamespace).List(ctx, metav1.ListOptions{LabelSelector: csiDriverPods})
	if err != nil {
		return nil, err
	}
	pods := map[string]driverPod{}
	for _, p := range list.Items {
		d := driverPod{Name: p.Name}
		if s := p.Status.ContainerStatuses; len(s) > 0 {
			d.Container, d.Ready = s[0].ContainerID, s[0].Ready && p.DeletionTimestamp == nil
		}
		if _, seen := pods[p.Spec.NodeName]; !seen || d.Ready {
			pods[p.Spec.NodeName] = d
		}
	}
	return pods, nil
}

// followDrivers polls the driver's pods every 100 ms until every node in
// nodes has a ready pod other than the one it had in before, and returns
// by node when its old pod stopped being ready (the outage's start) and
// when its new one became ready.
func followDrivers(t *testing.T, before map[string]driverPod, nodes []string, timeout time.Duration) (stopped, ready map[string]time.Time) {
	ctx := context.Background()
	stopped, ready = map[string]time.Time{}, map[string]time.Time{}
	deadline := time.Now().Add(timeout)
	for len(ready) < len(nodes) && time.Now().Before(deadline) {
		now := time.Now()
		pods, err := driverPods(ctx)
		if err != nil {
			t.Log(err) // an apiserver that does not answer says nothing of the drivers
			time.Sleep(100 * time.Millisecond)
			continue
		}
		for _, node := range nodes {
			name, old := pods[node].readyName(), before[node].readyName()
			if _, ok := stopped[node]; !ok && name != old {
				stopped[node] = now
			}
			if _, ok := ready[node]; !ok && name != "" && name != old {
				ready[node] = now
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	if len(ready) < len(nodes) {
		t.Errorf("after %s, a new driver ready on %d of %d nodes", timeout, len(ready), len(nodes))
	}
	return stopped, ready
}

// csiRollingUpgrade changes the DaemonSet's arguments (the log format),
// as an upgrade does, under the chart's maxUnavailable: no pod disturbed,
// no update lost, every volume current within restartCurrent of its node's
// new driver being ready.
func csiRollingUpgrade(t *testing.T) [][]string {
	w := newRestartWorkload(t, "e2e-kind-csi-roll")
	nodes := clusterNodes(t)
	before, err := driverPods(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	m, stopped, ready := w.around(t, func() (map[string]time.Time, map[string]time.Time) {
		helm(t, "upgrade", csiRelease, "deploy/helm/nodeagent", "--namespace", csiNamespace, "--reuse-values", "--set", "loggingFormat=text")
		return followDrivers(t, before, nodes, 2*time.Minute)
	})
	w.checkUndisturbed(t)
	return w.restartRows(t, "rolling upgrade (maxUnavailable 10 %)", m, stopped, ready)
}

// csiKubeletRestarted restarts a worker's kubelet: the driver is
// registered again (a pod created after it gets its volume), and the
// pods' volumes keep updating throughout.
func csiKubeletRestarted(t *testing.T) [][]string {
	w := newRestartWorkload(t, "e2e-kind-csi-kubelet")
	node := clusterNodes(t)[1]
	m, _, back := w.around(t, func() (map[string]time.Time, map[string]time.Time) {
		if out, err := nodeExec(node, "systemctl", "restart", "kubelet"); err != nil {
			t.Errorf("%v: %s", err, out)
		}
		return nil, map[string]time.Time{node: time.Now()}
	})
	mustCreate(t, w.ns, csiPod("after-restart", node, map[string]map[string]string{"cfg-0": {"configMap": "cfg-0"}}))
	cm, err := clientset.CoreV1().ConfigMaps(w.ns).Get(context.Background(), "cfg-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	inContainer(t, w.ns, "after-restart", "/mnt/cfg-0/"+e2eutil.DelayValueKey, cm.Data[e2eutil.DelayValueKey], 2*time.Minute)
	w.checkUndisturbed(t)
	return w.restartRows(t, "kubelet restarted", m, nil, back)
}

// csiDownWhilePodsChange takes the driver off a worker, and while it is
// gone deletes two pods there (one whose volume record is then made
// unreadable) and creates another: once it returns, the deleted pods
// terminate and leave nothing on disk, the new one starts, and every
// other volume is current within restartCurrent.
func csiDownWhilePodsChange(t *testing.T) [][]string {
	ctx := context.Background()
	w := newRestartWorkload(t, "e2e-kind-csi-down")
	node := clusterNodes(t)[1]
	one := map[string]map[string]string{"cfg-0": {"configMap": "cfg-0"}}
	var leaving []*corev1.Pod
	for _, name := range []string{"leaving-unreadable", "leaving"} {
		mustCreate(t, w.ns, csiPod(name, node, one))
		leaving = append(leaving, waitRunning(t, w.ns, name))
	}
	before, err := driverPods(ctx)
	if err != nil {
		t.Fatal(err)
	}
	m, stopped, back := w.around(t, func() (map[string]time.Time, map[string]time.Time) {
		down := time.Now()
		labelNode(t, node, "")
		eventually(t, time.Minute, "the driver gone from "+node, func() string {
			if pods, err := driverPods(ctx); err != nil || pods[node].Ready {
				return fmt.Sprintf("still there (%v)", err)
			}
			return ""
		})
		script := fmt.Sprintf(`for f in $(grep -l %s %s/csi/volumes/*.json); do printf '{"volumeID":' >"$f"; done`, leaving[0].UID, agentRoot)
		if out, err := nodeExec(node, "sh", "-c", script); err != nil {
			t.Errorf("%v: %s", err, out)
		}
		for _, pod := range leaving {
			if err := clientset.CoreV1().Pods(w.ns).Delete(ctx, pod.Name, metav1.DeleteOptions{}); err != nil {
				t.Error(err)
			}
		}
		mustCreate(t, w.ns, csiPod("arriving", node, one))
		time.Sleep(5 * time.Second)
		labelNode(t, node, "on")
		_, ready := followDrivers(t, before, []string{node}, 2*time.Minute)
		return map[string]time.Time{node: down}, ready
	})
	waitRunning(t, w.ns, "arriving")
	for _, pod := range leaving {
		eventually(t, 3*time.Minute, pod.Name+" gone, with its files", func() string {
			if _, err := clientset.CoreV1().Pods(w.ns).Get(ctx, pod.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return fmt.Sprintf("the pod is still there (%v)", err)
			}
			if dir := kubeletRoot + "/pods/" + string(pod.UID); exists(node, dir) {
				return dir + " is still on the node"
			}
			return ""
		})
	}
	out, err := nodeExec(node, "sh", "-c", "ls "+agentRoot+"/csi/volumes/unreadable/")
	if err != nil || strings.TrimSpace(string(out)) == "" {
		t.Errorf("no record moved aside to %s/csi/volumes/unreadable on %s: %q %v", agentRoot, node, out, err)
	}
	w.checkUndisturbed(t)
	return w.restartRows(t, "driver down 5 s while 2 pods leave and 1 arrives", m, stopped, back)
}
