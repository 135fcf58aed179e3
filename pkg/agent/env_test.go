package agent

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestEnvReaderReadsOncePerName(t *testing.T) {
	configMaps := map[string]*corev1.ConfigMap{
		"app": {ObjectMeta: metav1.ObjectMeta{Name: "app"}, Data: map[string]string{"LEVEL": "debug"}},
	}
	reads := map[string]int{}
	r := newEnvReader(func(_ context.Context, _, name string) (*corev1.ConfigMap, error) {
		reads[name]++
		if cm, ok := configMaps[name]; ok {
			return cm, nil
		}
		return nil, apierrors.NewNotFound(corev1.Resource("configmaps"), name)
	})
	keyRef := func(name, key string, optional bool) corev1.EnvVar {
		return corev1.EnvVar{Name: key, ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key, Optional: ptr.To(optional)}}}
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "u"}, Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "c",
			Env: []corev1.EnvVar{keyRef("app", "LEVEL", false), keyRef("extra", "X", true)},
			EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: "late"}}}},
		}},
	}}

	// "late" is missing and required: the first sync fails, as the kubelet
	// cannot start the container, and the next one reads again.
	err := r.read(context.Background(), pod)
	if err == nil || !strings.Contains(err.Error(), `configmap "late" not found`) {
		t.Fatalf("first sync: %v, want the missing ConfigMap named", err)
	}
	configMaps["late"] = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "late"}}
	if err := r.read(context.Background(), pod); err != nil {
		t.Fatalf("second sync: %v", err)
	}
	for range 5 {
		if err := r.read(context.Background(), pod); err != nil {
			t.Fatal(err)
		}
	}
	if reads["app"] != 2 || reads["extra"] != 2 || reads["late"] != 2 {
		t.Errorf("reads %v: want each name read at the two syncs that tried to start the container, none after", reads)
	}

	// An ephemeral container added later is read at the next sync, alone.
	pod.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
		Name: "debug", Env: []corev1.EnvVar{keyRef("app", "MISSING", false)}}}}
	err = r.read(context.Background(), pod)
	if err == nil || !strings.Contains(err.Error(), "couldn't find key MISSING in ConfigMap ns/app") {
		t.Errorf("a required key that is missing: %v", err)
	}
	if reads["app"] != 3 || reads["late"] != 2 {
		t.Errorf("reads %v: want only app read again", reads)
	}

	r.forget("u")
	pod.Spec.EphemeralContainers = nil
	if err := r.read(context.Background(), pod); err != nil || reads["app"] != 4 {
		t.Errorf("after forget: %v, reads %v; want a fresh read", err, reads)
	}
}
