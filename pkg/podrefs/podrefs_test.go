package podrefs

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeagent-io/nodeagent/pkg/model"
)

func yes() *bool { b := true; return &b }

func testPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"},
		Spec: corev1.PodSpec{
			ImagePullSecrets: []corev1.LocalObjectReference{{Name: "registry"}},
			InitContainers: []corev1.Container{{Name: "init", VolumeMounts: []corev1.VolumeMount{{Name: "tls"},
				{Name: "scratch", MountPath: "/work", SubPath: "init"}}}},
			Containers: []corev1.Container{{
				Name: "app",
				VolumeMounts: []corev1.VolumeMount{{Name: "config"}, {Name: "kube-api-access"},
					{Name: "config", MountPath: "/etc/app.yaml", SubPath: "app.yaml"}},
				EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "env"}}}},
				Env: []corev1.EnvVar{{Name: "PASSWORD", ValueFrom: &corev1.EnvVarSource{
					SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "db"}, Key: "password", Optional: yes()}}}},
			}},
			Volumes: []corev1.Volume{
				{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "web-config"},
					Items: []corev1.KeyToPath{{Key: "app.yaml", Path: "app.yaml"}}}}},
				{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: "tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "web-tls", Optional: yes()}}},
				{Name: "unmounted", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "never-read"}}}},
				{Name: "kube-api-access", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
					{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}},
					{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"}}},
					{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "extra"}, Optional: yes()}},
					{DownwardAPI: &corev1.DownwardAPIProjection{}},
				}}}},
			},
		},
	}
}

// Every kind of reference lands where the kubelet reads it: mounted
// volumes on every sync, env and pull secrets at container start, an
// unmounted volume nowhere; and each container's reads that never update
// while it runs: its subPath mounts of volumes that read objects (not of
// an emptyDir), its env.
func TestOf(t *testing.T) {
	got := Of(testPod())
	config := []Ref{{Kind: model.ConfigMap, Name: "web-config", Keys: []string{"app.yaml"}}}
	want := Refs{
		Volumes: []Volume{
			{Name: "config", Reads: config},
			{Name: "tls", Secret: true, Reads: []Ref{{Kind: model.Secret, Name: "web-tls", Optional: true}}},
			{Name: "kube-api-access", Reads: []Ref{{Kind: model.ConfigMap, Name: "kube-root-ca.crt"}, {Kind: model.Secret, Name: "extra", Optional: true}}},
		},
		ImagePullSecrets: []Ref{{Kind: model.Secret, Name: "registry", Optional: true}},
		Containers: []Container{{
			Name:     "app",
			SubPaths: []SubPathMount{{Volume: "config", MountPath: "/etc/app.yaml", SubPath: "app.yaml", Reads: config}},
			Env:      []Ref{{Kind: model.ConfigMap, Name: "env"}, {Kind: model.Secret, Name: "db", Optional: true, Keys: []string{"password"}}},
		}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Of:\n got %+v\nwant %+v", got, want)
	}
	mirror := testPod()
	mirror.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "x"}
	if refs := Of(mirror); len(refs.Volumes)+len(refs.Containers)+len(refs.ImagePullSecrets) != 0 {
		t.Errorf("a mirror pod references %+v, want nothing", refs)
	}
}

// A missing optional object is read on every remount, marked missing; a
// missing required one fails its volume, whose mount is retried and
// reads up to the missing object only.
func TestModelPod(t *testing.T) {
	missing := map[string]bool{"extra": true, "kube-root-ca.crt": true}
	exists := func(kind model.Kind, namespace, name string) (bool, bool, bool) {
		return !missing[name], name == "web-config", true
	}
	got := ModelPod("shop", "web", Of(testPod()), exists)
	obj := func(kind model.Kind, name string) model.Object {
		return model.Object{Kind: kind, Namespace: "shop", Name: name}
	}
	immutable := obj(model.ConfigMap, "web-config")
	immutable.Immutable = true
	want := model.Pod{Name: "shop/web", Volumes: 3,
		Reads:   []model.Object{immutable, obj(model.Secret, "web-tls")},
		Retries: []model.Object{{Kind: model.ConfigMap, Namespace: "shop", Name: "kube-root-ca.crt", Missing: true}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ModelPod:\n got %+v\nwant %+v", got, want)
	}
	delete(missing, "kube-root-ca.crt")
	got = ModelPod("shop", "web", Of(testPod()), exists)
	if len(got.Retries) != 0 || len(got.Reads) != 4 || !got.Reads[3].Missing {
		t.Errorf("with only the optional Secret missing: %+v; want four reads, the last one missing, no retries", got)
	}
}

// AgentVolumes counts what KeptVolumes keeps: a projected volume that
// reads no object (the downward API alone) is on disk all the same.
func TestAgentVolumesCountWhatTheAgentKeeps(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "app", VolumeMounts: []corev1.VolumeMount{{Name: "config"}, {Name: "labels"}, {Name: "tls"}, {Name: "scratch"}}}},
			Volumes: []corev1.Volume{
				{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "web-config"}}}},
				{Name: "labels", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
					{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}}}}},
				}}}},
				{Name: "tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "web-tls"}}},
				{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			},
		},
	}
	all := func(model.Kind, string, string) (bool, bool, bool) { return true, false, true }
	kept := KeptVolumes(pod)
	if got := AgentVolumes("shop", Of(pod), all); got != len(kept) || got != 2 {
		t.Errorf("AgentVolumes %d, KeptVolumes %d (%v): want both 2, the ConfigMap and the projected volume", got, len(kept), kept)
	}
}
