//go:build e2e

package e2ekind

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nodeagent-io/nodeagent/test/e2eutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// nodeVarDir is where this machine holds a kind node's /var (a Docker
// volume of the node's container, which outlives its processes): the
// only way to read a node's files across the node's restart.
func nodeVarDir(t *testing.T, node string) string {
	t.Helper()
	out, err := exec.Command("docker", "inspect", "-f", "{{json .Mounts}}", node).Output()
	if err != nil {
		t.Fatalf("docker inspect %s: %v", node, err)
	}
	var mounts []struct{ Source, Destination string }
	if err := json.Unmarshal(out, &mounts); err != nil {
		t.Fatal(err)
	}
	for _, m := range mounts {
		if m.Destination == "/var" {
			return m.Source
		}
	}
	t.Fatalf("%s has no volume at /var: %s", node, out)
	return ""
}

// volumeFiles are the workload's files as the volumes on the nodes hold
// them (what each container mounts), read through the nodes' /var
// volumes: they stay readable while a node's containers are replaced.
func (w *restartWorkload) volumeFiles(t *testing.T) []e2eutil.DelayFile {
	var files []e2eutil.DelayFile
	vars := map[string]string{}
	for _, pod := range w.pods {
		node := pod.Spec.NodeName
		if vars[node] == "" {
			vars[node] = nodeVarDir(t, node)
		}
		for i, cm := range w.configMaps {
			dir := filepath.Join(vars[node], "lib", "kubelet", "pods", string(pod.UID), "volumes", "kubernetes.io~csi", cm, "mount")
			files = append(files, e2eutil.DelayFile{Group: node, Object: i, Path: filepath.Join(dir, e2eutil.DelayValueKey)})
		}
	}
	return files
}

// csiNodeRestarted restarts a worker's container, as a node reboots: its
// kubelet, containerd, the driver and every container stop and start
// again. The pods come back, same pods, their containers started again,
// with their volumes served again and current within restartCurrent of
// their return: the driver's, or the kubelet's publish calls where they
// come later (the restart emptied the tmpfs of the tokens kept, so the
// driver reads nothing until them, and the kubelet retries a mount that
// failed before the driver registered after its backoff). Nothing of the
// old volumes is left on the node (a record per volume in use, none
// unreadable); the pods of the other worker are undisturbed.
func csiNodeRestarted(t *testing.T) [][]string {
	ctx := context.Background()
	w := newRestartWorkload(t, "e2e-kind-csi-node")
	node := clusterNodes(t)[2]
	pods, err := driverPods(ctx)
	before := pods[node].Container
	if err != nil || before == "" {
		t.Fatalf("the driver on %s: %q %v", node, before, err)
	}
	m, stopped, back := w.aroundFiles(t, restartFiles{configMaps: w.volumeFiles(t)}, func() (map[string]time.Time, map[string]time.Time) {
		stop := time.Now()
		if out, err := exec.Command("docker", "restart", "--time", "1", node).CombinedOutput(); err != nil {
			t.Fatalf("docker restart %s: %v: %s", node, err, out)
		}
		var ready time.Time
		eventually(t, 3*time.Minute, "a new driver ready on "+node, func() string {
			pods, err := driverPods(ctx)
			if now := pods[node]; err != nil || now.Container == before || !now.Ready {
				return fmt.Sprintf("%+v (%v)", now, err)
			}
			ready = time.Now()
			return ""
		})
		return map[string]time.Time{node: stop}, map[string]time.Time{node: ready}
	})
	restorePodNetwork(t, node)
	var kept []*corev1.Pod
	volumes := 0
	var published time.Time // by when the kubelet had published every volume again
	for _, pod := range w.pods {
		if pod.Spec.NodeName != node {
			kept = append(kept, pod)
			continue
		}
		for _, v := range pod.Spec.Volumes {
			if v.CSI != nil {
				volumes++
			}
		}
		eventually(t, 2*time.Minute, pod.Name+" running again", func() string {
			p, err := clientset.CoreV1().Pods(w.ns).Get(ctx, pod.Name, metav1.GetOptions{})
			if err != nil || p.UID != pod.UID {
				return fmt.Sprintf("not the same pod (%v)", err)
			}
			s := p.Status.ContainerStatuses
			if len(s) == 0 || s[0].State.Running == nil || s[0].RestartCount == 0 {
				return fmt.Sprintf("%+v", s)
			}
			// A container starts once its volumes are published; its
			// start is in whole seconds.
			published = later(published, s[0].State.Running.StartedAt.Add(time.Second))
			return ""
		})
	}
	w.servedAgain = map[string]time.Time{node: published}
	// A record per volume, none unreadable, and a token kept per volume
	// (the kubelet's publish calls after the restart brought them).
	out, err := nodeExec(node, "sh", "-c", "ls "+agentRoot+"/csi/volumes/*.json | wc -l; ls "+agentRoot+"/csi/volumes/unreadable 2>/dev/null | wc -l; "+
		"ls /run/nodeagent/csi-tokens/*.token | wc -l")
	if got := strings.Fields(string(out)); err != nil || len(got) != 3 || got[0] != fmt.Sprint(volumes) || got[1] != "0" || got[2] != fmt.Sprint(volumes) {
		t.Errorf("on %s, records, unreadable records and kept tokens: %q (%v), want %d, 0 and %d", node, out, err, volumes, volumes)
	}
	all := w.pods
	w.pods = kept
	w.checkUndisturbed(t)
	w.pods = all
	w.checkSecretsServed(t, node)
	return w.restartRows(t, "node restarted", m, stopped, back)
}

// checkSecretsServed updates each Secret of the workload once and waits
// for the update in every container on node: the Secret volumes, whose
// tmpfs mounts a node's restart empties (read only through the pods'
// containers, not the node's /var), are filled again and followed.
func (w *restartWorkload) checkSecretsServed(t *testing.T, node string) {
	t.Helper()
	ctx := context.Background()
	for _, name := range w.secrets {
		patch := fmt.Sprintf(`{"stringData":{%q:"after-the-restart"}}`, e2eutil.DelayValueKey)
		if _, err := clientset.CoreV1().Secrets(w.ns).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, pod := range w.pods {
		if pod.Spec.NodeName != node {
			continue
		}
		for _, name := range w.secrets {
			inContainer(t, w.ns, pod.Name, "/mnt/"+name+"/"+e2eutil.DelayValueKey, "after-the-restart", time.Minute)
		}
	}
}

// restorePodNetwork sets up again, after node restarted, the routes of the
// pod network hack/kind/pod-network.sh gives a cluster of the offline node
// image (kindnetd's work on a published one): a restarted node has lost its
// routes to the other nodes' pods, and the others' routes to its pods lead
// nowhere if its address changed.
func restorePodNetwork(t *testing.T, node string) {
	t.Helper()
	if !exists(node, "/etc/cni/net.d/10-nodeagent-kind.conflist") {
		return // kindnetd's network, which kindnetd restores
	}
	cmd := exec.Command("hack/kind/pod-network.sh", clusterName)
	cmd.Dir = repoRoot(t)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("hack/kind/pod-network.sh: %v: %s", err, out)
	}
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
