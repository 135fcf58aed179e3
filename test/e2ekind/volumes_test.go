//go:build e2e

package e2ekind

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/nodeagent-io/nodeagent/internal/volumetree"
)

// TestAgentsOnEveryNode: the DaemonSet's agent runs and is ready on each of
// the three nodes, control plane included.
func TestAgentsOnEveryNode(t *testing.T) {
	nodes := clusterNodes(t)
	ds, err := clientset.AppsV1().DaemonSets("nodeagent").Get(context.Background(), "nodeagent", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if int(ds.Status.NumberReady) != len(nodes) {
		t.Fatalf("%d agents ready, want one on each of %d nodes", ds.Status.NumberReady, len(nodes))
	}
	checkAgentsRun(t, ds, agentImage)
}

// probeVolumes are the volumes of the test's pods: a ConfigMap with items,
// nested paths, modes and binary data; a whole ConfigMap; and a projected
// volume of a ConfigMap and downward API files. Every pod also gets the
// service-account volume, as on every real cluster.
func probeVolumes() []corev1.Volume {
	return []corev1.Volume{
		{Name: "app", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "app"},
			DefaultMode:          ptr.To[int32](0o640),
			Items: []corev1.KeyToPath{
				{Key: "config.yaml", Path: "etc/app/config.yaml", Mode: ptr.To[int32](0o600)},
				{Key: "logo.bin", Path: "logo.bin"},
			},
		}}},
		{Name: "shared", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "shared"},
		}}},
		{Name: "projected", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			Sources: []corev1.VolumeProjection{
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "shared"}}},
				{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{
					{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}},
					{Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}},
				}}},
			},
		}}},
	}
}

func probePod(node string) *corev1.Pod {
	var mounts []corev1.VolumeMount
	for _, v := range probeVolumes() {
		mounts = append(mounts, corev1.VolumeMount{Name: v.Name, MountPath: "/mnt/" + v.Name})
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "probe-" + node, Labels: map[string]string{"app": "probe", "node": node}},
		Spec: corev1.PodSpec{
			NodeName:                      node,
			Tolerations:                   []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			Containers:                    []corev1.Container{{Name: "pause", Image: podImage, VolumeMounts: mounts}},
			Volumes:                       probeVolumes(),
		},
	}
}

// podVolume is one volume of a running pod, where both writers keep it.
type podVolume struct {
	pod    *corev1.Pod
	plugin string // configmap or projected
	name   string
}

func (v podVolume) String() string {
	return fmt.Sprintf("%s/%s volume %s on %s", v.pod.Namespace, v.pod.Name, v.name, v.pod.Spec.NodeName)
}

// sameAsKubelet says how the agent's copy of a volume differs from the
// kubelet's on the same node, or returns "". The service-account token is
// the one file nodeagent does not write, on purpose
// (docs/kubelet-behaviour.md).
func sameAsKubelet(v podVolume) string {
	node := v.pod.Spec.NodeName
	want, err := readTree(node, volumeDir(kubeletRoot, v.pod.UID, v.plugin, v.name))
	if err != nil {
		return err.Error()
	}
	got, err := readTree(node, volumeDir(agentRoot, v.pod.UID, v.plugin, v.name))
	if err != nil {
		return err.Error()
	}
	if strings.HasPrefix(v.name, "kube-api-access-") {
		for p := range want {
			if p == "token" || strings.HasSuffix(p, "/token") {
				delete(want, p)
			}
		}
	}
	return strings.Join(volumetree.Diff(want, got, "kubelet", "nodeagent"), "\n")
}

// TestRealPodVolumes runs a real pod on every node and holds the agent's
// files to the files the node's kubelet wrote for it: at the mount, after
// the ConfigMaps change, and until the pod is deleted.
func TestRealPodVolumes(t *testing.T) {
	t.Parallel() // touches no kubelet: runs beside TestCSIDriver, TestRealPodVolumes and TestHelmInstallAndUpgrade, after the tests that restart kubelets
	ctx := context.Background()
	nodes := clusterNodes(t)
	ns := testNamespace(t, "e2e-kind-volumes")
	configMaps := []*corev1.ConfigMap{
		{ObjectMeta: metav1.ObjectMeta{Name: "app"},
			Data:       map[string]string{"config.yaml": "replicas: 3\n", "unused": "not projected"},
			BinaryData: map[string][]byte{"logo.bin": {0x89, 'P', 'N', 'G', 0, 1, 2, 0xff}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "shared"}, Data: map[string]string{"greeting": "hello", "colour": "blue"}},
	}
	for _, cm := range configMaps {
		if _, err := clientset.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	var volumes []podVolume
	for _, node := range nodes {
		pod, err := clientset.CoreV1().Pods(ns).Create(ctx, probePod(node), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		eventually(t, 3*time.Minute, "pod "+pod.Name+" running", func() string {
			pod, err = clientset.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
			if err != nil {
				return err.Error()
			}
			if pod.Status.Phase != corev1.PodRunning {
				return "phase " + string(pod.Status.Phase)
			}
			return ""
		})
		for _, v := range pod.Spec.Volumes {
			plugin := "configmap"
			if v.Projected != nil {
				plugin = "projected"
			}
			volumes = append(volumes, podVolume{pod: pod, plugin: plugin, name: v.Name})
		}
	}
	if len(volumes) != 4*len(nodes) {
		t.Fatalf("%d volumes, want 4 per pod (3 and the service-account volume)", len(volumes))
	}

	t.Run("mounted", func(t *testing.T) {
		for _, v := range volumes {
			eventually(t, 90*time.Second, v.String()+" equal to the kubelet's", func() string { return sameAsKubelet(v) })
		}
		t.Logf("%d volumes on %d nodes equal to the kubelet's", len(volumes), len(nodes))
	})

	t.Run("updated", func(t *testing.T) {
		for _, cm := range configMaps {
			cm, err := clientset.CoreV1().ConfigMaps(ns).Get(ctx, cm.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			switch cm.Name {
			case "app":
				cm.Data["config.yaml"] = "replicas: 5\n"
			case "shared":
				cm.Data["greeting"] = "hello again"
				delete(cm.Data, "colour")
			}
			if _, err := clientset.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		// Both writers update at each pod's next sync (S = 1 m).
		for _, v := range volumes {
			if v.name != "shared" {
				continue
			}
			node := v.pod.Spec.NodeName
			eventually(t, 3*time.Minute, v.String()+" updated on both sides", func() string {
				for _, root := range []string{kubeletRoot, agentRoot} {
					got, err := readFile(node, volumeDir(root, v.pod.UID, v.plugin, v.name)+"/greeting")
					if err != nil || got != "hello again" {
						return fmt.Sprintf("%s has %q (%v)", root, got, err)
					}
				}
				return ""
			})
		}
		for _, v := range volumes {
			eventually(t, 90*time.Second, v.String()+" equal to the kubelet's after the update", func() string { return sameAsKubelet(v) })
		}
	})

	t.Run("deleted", func(t *testing.T) {
		for _, node := range nodes {
			err := clientset.CoreV1().Pods(ns).Delete(ctx, "probe-"+node, metav1.DeleteOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				t.Fatal(err)
			}
		}
		for _, v := range volumes {
			dir := volumeDir(agentRoot, v.pod.UID, v.plugin, v.name)
			eventually(t, 2*time.Minute, v.String()+" removed by the agent", func() string {
				if exists(v.pod.Spec.NodeName, dir) {
					return dir + " is still there"
				}
				return ""
			})
		}
	})
}
