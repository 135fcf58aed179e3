// Package inventorytest holds a small fake cluster, for the tests of the
// packages that read clusters (inventory, analyze).
package inventorytest

import (
	"github.com/nodeagent-io/nodeagent/pkg/ttl"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// FakeCluster is a cluster of one node and pods in every state that
// inventory.List keeps or leaves out, with the objects they read.
func FakeCluster() *fake.Clientset {
	immutable := true
	pod := func(name, node string, phase corev1.PodPhase) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
			Spec: corev1.PodSpec{NodeName: node,
				Containers: []corev1.Container{{Name: "c", VolumeMounts: []corev1.VolumeMount{{Name: "v"}}}},
				Volumes: []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{
					ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "frozen"}}}}}},
			Status: corev1.PodStatus{Phase: phase}}
	}
	return fake.NewClientset(
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node", Annotations: map[string]string{ttl.Annotation: "0"}},
			Status: corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{KubeletVersion: "v1.28.15"}}},
		pod("running", "node", corev1.PodRunning),
		pod("done", "node", corev1.PodSucceeded),
		pod("unscheduled", "", corev1.PodPending),
		terminating(pod("terminating", "node", corev1.PodRunning)),
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "frozen"}, Immutable: &immutable, Data: map[string]string{"k": "v"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s"}, Data: map[string][]byte{"password": []byte("hunter2")}},
	)
}

func terminating(p *corev1.Pod) *corev1.Pod {
	p.DeletionTimestamp = &metav1.Time{}
	return p
}
