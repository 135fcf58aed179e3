package podconfig

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestClassify(t *testing.T) {
	base := func() *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "u", ResourceVersion: "10",
				Labels: map[string]string{"app": "web"}, Annotations: map[string]string{"team": "a"}},
			Spec:   corev1.PodSpec{NodeName: "n", Containers: []corev1.Container{{Name: "c", Image: "pause"}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning},
		}
	}
	grace := int64(30)
	tests := []struct {
		name   string
		change func(*corev1.Pod)
		want   Change
	}{
		{"nothing", func(*corev1.Pod) {}, Ignored},
		{"resourceVersion", func(p *corev1.Pod) { p.ResourceVersion = "11" }, Ignored},
		{"managedFields", func(p *corev1.Pod) {
			p.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate}}
		}, Ignored},
		{"generation", func(p *corev1.Pod) { p.Generation = 3 }, Ignored},
		{"kubelet's own annotation", func(p *corev1.Pod) { p.Annotations["kubernetes.io/config.seen"] = "2026-11-22" }, Ignored},
		{"status condition", func(p *corev1.Pod) {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		}, StatusOnly},
		{"phase", func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }, StatusOnly},
		{"spec", func(p *corev1.Pod) { p.Spec.Containers[0].Image = "pause:2" }, Sync},
		{"label", func(p *corev1.Pod) { p.Labels["tier"] = "front" }, Sync},
		{"annotation", func(p *corev1.Pod) { p.Annotations["team"] = "b" }, Sync},
		{"annotation removed", func(p *corev1.Pod) { delete(p.Annotations, "team") }, Sync},
		{"deletion timestamp", func(p *corev1.Pod) {
			p.DeletionTimestamp = &metav1.Time{Time: time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)}
		}, Sync},
		{"grace period", func(p *corev1.Pod) { p.DeletionGracePeriodSeconds = &grace }, Sync},
		{"spec and status", func(p *corev1.Pod) { p.Labels["x"] = "y"; p.Status.PodIP = "10.0.0.1" }, Sync},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old, updated := base(), base()
			tt.change(updated)
			if got := Classify(old, updated); got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
}
