package podrefs

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
)

// Every name the kubelet's RegisterPod registers: ConfigMap volumes (mounted
// or not), projected configMap sources, and env references of every kind of
// container.
func TestConfigMapNames(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}}
	pod.Spec.Volumes = []corev1.Volume{{Name: "vol", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: "volume"}}}}}
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: "sa", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		Sources: []corev1.VolumeProjection{
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"}}},
			{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "not-a-configmap"}}},
		}}}})
	keyRef := func(name string) []corev1.EnvVar {
		return []corev1.EnvVar{{Name: "X", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: "k"}}}}
	}
	pod.Spec.InitContainers = []corev1.Container{{Name: "init", Env: keyRef("init-env")}}
	pod.Spec.Containers = []corev1.Container{{Name: "app", EnvFrom: []corev1.EnvFromSource{
		{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "app-envfrom"}}}}}}
	pod.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug", Env: keyRef("debug-env")}}}
	got := sets.List(ConfigMapNames(pod))
	want := []string{"app-envfrom", "debug-env", "init-env", "kube-root-ca.crt", "volume"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("ConfigMapNames: got %v, want %v", got, want)
	}
	if got, want := sets.List(EnvConfigMapNames(pod)), []string{"app-envfrom", "debug-env", "init-env"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("EnvConfigMapNames: got %v, want %v", got, want)
	}
}
