package compare

import (
	"context"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func podWithConfigMaps(namespace, name, node string, phase corev1.PodPhase, mounted, unmounted []string) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c"}}},
		Status:     corev1.PodStatus{Phase: phase},
	}
	for _, cm := range append(slices.Clone(mounted), unmounted...) {
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: "v-" + cm, VolumeSource: corev1.VolumeSource{
			ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: cm}},
		}})
	}
	for _, cm := range mounted {
		pod.Spec.Containers[0].VolumeMounts = append(pod.Spec.Containers[0].VolumeMounts, corev1.VolumeMount{Name: "v-" + cm})
	}
	return pod
}

// The model counts exactly the volumes the deployed agents keep besides
// the run's own: mounted ConfigMap volumes of unfinished pods on the
// agents' nodes, outside the run's namespace.
func TestServedPods(t *testing.T) {
	client := fake.NewSimpleClientset(
		podWithConfigMaps("a", "web", "n1", corev1.PodRunning, []string{"cfg", "extra"}, []string{"unused"}),
		podWithConfigMaps("b", "web", "n1", corev1.PodPending, []string{"cfg"}, nil),
		podWithConfigMaps("a", "done", "n1", corev1.PodSucceeded, []string{"cfg"}, nil),
		podWithConfigMaps("a", "elsewhere", "n9", corev1.PodRunning, []string{"cfg"}, nil),
		podWithConfigMaps("a", "nothing-mounted", "n2", corev1.PodRunning, nil, []string{"cfg"}),
		podWithConfigMaps("run", "pod-00000", "n1", corev1.PodRunning, []string{"cm-00000-0"}, nil),
	)
	served, err := servedPods(context.Background(), client, []string{"n1", "n2"}, "run")
	if err != nil {
		t.Fatal(err)
	}
	if len(served) != 1 || len(served["n1"]) != 2 {
		t.Fatalf("served = %+v, want the two unfinished pods on n1 with mounted ConfigMaps", served)
	}
	nodes := withServedPods([]nodeLayout{{name: "n1", pods: []podLayout{{name: "pod-00000", configMaps: []string{"cm-00000-0"}}}}}, []string{"n1", "n2"}, served)
	if len(nodes) != 2 || nodes[0].name != "n1" || nodes[1].name != "n2" {
		t.Fatalf("layout %+v, want n1 and n2", nodes)
	}
	// One ConfigMap name in two namespaces is two cache entries.
	refs := nodes[0].referencesPerConfigMap()
	if nodes[0].volumes() != 4 || len(refs) != 4 || refs["a/cfg"] != 1 || refs["b/cfg"] != 1 {
		t.Errorf("n1 has %d volumes, references %v; want the run's 1 and a/cfg, a/extra, b/cfg", nodes[0].volumes(), refs)
	}
}

func TestRolloutState(t *testing.T) {
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Generation: 3}}
	ds.Status = appsv1.DaemonSetStatus{ObservedGeneration: 2, DesiredNumberScheduled: 3, UpdatedNumberScheduled: 3, NumberAvailable: 3}
	if done, _ := rolloutState(ds); done {
		t.Error("done before the controller observed the change")
	}
	ds.Status.ObservedGeneration, ds.Status.UpdatedNumberScheduled = 3, 2
	if done, state := rolloutState(ds); done || state != "2 of 3 pods updated, 3 available" {
		t.Errorf("done %v (%s) with a pod not updated", done, state)
	}
	ds.Status.UpdatedNumberScheduled, ds.Status.NumberAvailable = 3, 2
	if done, _ := rolloutState(ds); done {
		t.Error("done with an updated pod not available")
	}
	ds.Status.NumberAvailable = 3
	if done, _ := rolloutState(ds); !done {
		t.Error("not done with every pod updated and available")
	}
}

func TestNodesMatching(t *testing.T) {
	node := func(name, pool string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"pool": pool}}}
	}
	client := fake.NewSimpleClientset(node("a", "general"), node("b", "gpu"), node("c", "general"), node("d", "general"))
	got, err := nodesMatching(context.Background(), client, "pool=general", []string{"a", "b", "c"})
	if err != nil || !slices.Equal(got, []string{"a", "c"}) {
		t.Errorf("nodesMatching = %v, %v; want the agents' nodes in pool general, a and c", got, err)
	}
	if _, err := nodesMatching(context.Background(), client, "pool=(", nil); err == nil {
		t.Error("a malformed selector was accepted")
	}
}
