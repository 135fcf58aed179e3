package live

import (
	"runtime"
	"strings"
	"testing"
	"time"
	"unique"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/nodeagent-io/nodeagent/pkg/convert"
	"github.com/nodeagent-io/nodeagent/pkg/podrefs"
	"github.com/nodeagent-io/nodeagent/pkg/podrefs/inventory"
)

// packedTestPod reads objects every way a pod can: configMap, Secret and
// projected volumes with and without items, subPath mounts, envFrom and
// env keys, image pull secrets, an init container; two containers run,
// started at different times; a ReplicaSet owns it.
func packedTestPod() *corev1.Pod {
	started := func(minute int) corev1.ContainerState {
		return corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(time.Date(2026, 11, 28, 9, minute, 7, 0, time.UTC))}}
	}
	cm := func(name string, keys ...string) corev1.VolumeSource {
		s := corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: name}}}
		for _, k := range keys {
			s.ConfigMap.Items = append(s.ConfigMap.Items, corev1.KeyToPath{Key: k, Path: k})
		}
		return s
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-5d8f-x2", CreationTimestamp: metav1.NewTime(time.Date(2026, 11, 28, 9, 1, 2, 0, time.UTC)), Labels: map[string]string{"pod-template-hash": "5d8f"},
			OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "web-5d8f", Controller: ptr.To(true)}}},
		Spec: corev1.PodSpec{
			NodeName:         "node-1",
			ImagePullSecrets: []corev1.LocalObjectReference{{Name: "registry"}},
			InitContainers:   []corev1.Container{{Name: "init", VolumeMounts: []corev1.VolumeMount{{Name: "tls", MountPath: "/tls"}}}},
			Containers: []corev1.Container{{
				Name: "app",
				VolumeMounts: []corev1.VolumeMount{{Name: "config", MountPath: "/etc/app"}, {Name: "kube-api-access", MountPath: "/sa"},
					{Name: "config", MountPath: "/etc/app.yaml", SubPath: "app.yaml"}},
				EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "env"}}}},
				Env: []corev1.EnvVar{{Name: "PASSWORD", ValueFrom: &corev1.EnvVarSource{
					SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "db"}, Key: "password", Optional: ptr.To(true)}}}},
			}, {
				Name:         "sidecar",
				VolumeMounts: []corev1.VolumeMount{{Name: "whole", MountPath: "/whole"}, {Name: "whole", MountPath: "/one", SubPathExpr: "$(POD)"}},
			}},
			Volumes: []corev1.Volume{
				{Name: "config", VolumeSource: cm("web-config", "app.yaml")},
				{Name: "whole", VolumeSource: cm("shared")},
				{Name: "tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "web-tls", Optional: ptr.To(true), DefaultUser: ptr.To[int64](1000)}}},
				{Name: "kube-api-access", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
					{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}},
					{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"}, Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
					{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "extra"}, Optional: ptr.To(true)}},
				}}}},
			},
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{
			{Name: "app", State: started(3)}, {Name: "sidecar", State: started(5)}}},
	}
}

// A served pod's entry, packed and unpacked, is the inventory's entry of
// the pod, whatever it references: with its volumes the kubelet's, with
// them the CSI driver's (converted, a subPath'd one inPlace), with none.
func TestPackedPodEntriesRoundTrip(t *testing.T) {
	converted := packedTestPod()
	convert.PodSpec(&converted.Spec, nil)
	converted.Annotations = map[string]string{podrefs.ConvertedAnnotation: "config,whole"}
	bare := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "bare"}, Spec: corev1.PodSpec{NodeName: "node-2", Containers: []corev1.Container{{Name: "app"}}}}
	// Waiting for a volume of the driver that it refuses.
	waiting := converted.DeepCopy()
	waiting.Name = "waiting"
	waiting.Spec.Volumes = append(waiting.Spec.Volumes, corev1.Volume{Name: "bad", VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{
		Driver: podrefs.DriverName, VolumeAttributes: map[string]string{podrefs.AttrConfigMap: "web-config", "namespace": "other"}}}})
	waiting.Spec.Containers[0].VolumeMounts = append(waiting.Spec.Containers[0].VolumeMounts, corev1.VolumeMount{Name: "bad", MountPath: "/bad"})
	waiting.Status = corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodReadyToStartContainers, Status: corev1.ConditionFalse}}}
	for _, p := range []*corev1.Pod{packedTestPod(), converted, bare, waiting} {
		want := inventory.PodInfoOf(p)
		obj, err := toPodEntry(p)
		if err != nil {
			t.Fatal(err)
		}
		e := obj.(*podEntry)
		if !e.Served || e.nodeName() != p.Spec.NodeName {
			t.Fatalf("%s: entry served %v on %q", p.Name, e.Served, e.nodeName())
		}
		if diff := cmp.Diff(want, e.info(), cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%s: unpacked entry differs from the inventory's (-want +got):\n%s", p.Name, diff)
		}
		if p == waiting && (!want.WaitingForVolumes || len(want.Refs.RefusedDriverVolumes) != 1) {
			t.Errorf("%s: waiting %v, refused volumes %+v; want waiting, bad refused", p.Name, want.WaitingForVolumes, want.Refs.RefusedDriverVolumes)
		}
		if len(want.Refs.DriverVolumes) > 0 && p != converted && p != waiting || p == converted && len(want.Refs.DriverVolumes) != 2 {
			t.Errorf("%s: %d driver volumes", p.Name, len(want.Refs.DriverVolumes))
		}
		t.Logf("%s: %d bytes packed", p.Name, len(e.packed))
	}
}

// Two pods' entries share one copy of each name they repeat (a decoded
// pod has its own): their namespace and node for as long as either entry
// is here, the names they unpack for as long as anything holds a handle of
// them (the test does, so that a collection between the two cannot make
// them canonical twice).
func TestPodEntriesShareNames(t *testing.T) {
	p := packedTestPod()
	refs := inventory.PodInfoOf(p).Refs
	held := []unique.Handle[string]{unique.Make(refs.Volumes[0].Name), unique.Make(refs.Volumes[0].Reads[0].Name),
		unique.Make(refs.Volumes[0].Reads[0].Keys[0]), unique.Make(refs.Containers[0].Name)}
	defer runtime.KeepAlive(held)
	entry := func(name string) (*podEntry, inventory.PodInfo) {
		p := packedTestPod()
		p.Name, p.Namespace, p.Spec.NodeName = name, strings.Clone(p.Namespace), strings.Clone(p.Spec.NodeName)
		obj, err := toPodEntry(p)
		if err != nil {
			t.Fatal(err)
		}
		return obj.(*podEntry), obj.(*podEntry).info()
	}
	ea, a := entry("a")
	runtime.GC() // the namespace and node stay canonical: the first entry holds their handles
	eb, b := entry("b")
	same := func(what, x, y string) {
		if x != y || unsafe.StringData(x) != unsafe.StringData(y) {
			t.Errorf("%s: %q and %q are two copies", what, x, y)
		}
	}
	same("namespace", ea.namespace, eb.namespace)
	same("node", ea.nodeName(), eb.nodeName())
	same("unpacked namespace", a.Namespace, b.Namespace)
	same("volume", a.Refs.Volumes[0].Name, b.Refs.Volumes[0].Name)
	same("ConfigMap", a.Refs.Volumes[0].Reads[0].Name, b.Refs.Volumes[0].Reads[0].Name)
	same("key", a.Refs.Volumes[0].Reads[0].Keys[0], b.Refs.Volumes[0].Reads[0].Keys[0])
	same("container", a.Refs.Containers[0].Name, b.Refs.Containers[0].Name)
}
