package daemonset

import (
	"context"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nodeagent-io/nodeagent/internal/progress"
	"github.com/nodeagent-io/nodeagent/pkg/compare/modes"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// The original template survives a run that dies half-way: the next run
// finds it in the annotation, and restore puts it back exactly.
func TestDaemonSetSwitchAndRestore(t *testing.T) {
	ctx := context.Background()
	original := []string{"run", "--root-dir=/var/lib/nodeagent", "--cache-invalidation", "first-reference"}
	client := fake.NewSimpleClientset(&appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "nodeagent", Name: "nodeagent"},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "nodeagent"}},
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{
				{Name: "sidecar", Args: []string{"--keep"}},
				{Name: "nodeagent", Args: original},
			}}},
		},
	})
	f, err := New(Options{DaemonSet: "nodeagent/nodeagent", SyncFrequency: 5 * time.Second, RolloutTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	f.client, f.container, f.progress = client, "nodeagent", progress.New(io.Discard)
	containers := func() []corev1.Container {
		ds, err := client.AppsV1().DaemonSets("nodeagent").Get(ctx, "nodeagent", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return ds.Spec.Template.Spec.Containers
	}

	if earlier, err := f.saveOriginal(ctx); err != nil || earlier {
		t.Fatalf("saveOriginal = %v, %v; want a fresh record", earlier, err)
	}
	if _, err := f.Start(ctx, modes.EverySync, 0); err != nil {
		t.Fatal(err)
	}
	want := []string{"run", "--root-dir=/var/lib/nodeagent", "--configmap-strategy=Cache", "--cache-invalidation=every-sync", "--sync-frequency=5s"}
	if got := containers(); !slices.Equal(got[1].Args, want) || !slices.Equal(got[0].Args, []string{"--keep"}) {
		t.Fatalf("every-sync args %q and %q, want %q and the sidecar untouched", got[1].Args, got[0].Args, want)
	}
	// A second run, after the first died without restoring.
	if earlier, err := f.saveOriginal(ctx); err != nil || !earlier {
		t.Fatalf("saveOriginal = %v, %v; want the earlier run's record kept", earlier, err)
	}
	if err := f.restore(ctx, true); err != nil {
		t.Fatal(err)
	}
	if got := containers(); !slices.Equal(got[1].Args, original) {
		t.Errorf("restored args %q, want %q", got[1].Args, original)
	}
	ds, _ := client.AppsV1().DaemonSets("nodeagent").Get(ctx, "nodeagent", metav1.GetOptions{})
	if _, ok := ds.Annotations[originalTemplateAnnotation]; ok {
		t.Error("the annotation outlived the restore")
	}
	if err := f.restore(ctx, false); err == nil {
		t.Error("a second restore, with nothing recorded, did not fail")
	}
}

func TestFindDaemonSetSaysWhatIsWrong(t *testing.T) {
	ds := func(name string, containers ...corev1.Container) *appsv1.DaemonSet {
		return &appsv1.DaemonSet{
			ObjectMeta: metav1.ObjectMeta{Namespace: "nodeagent", Name: name},
			Spec: appsv1.DaemonSetSpec{
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: containers}},
			},
		}
	}
	agentPod := func(name, ds, node string, ready corev1.ConditionStatus) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "nodeagent", Name: name, Labels: map[string]string{"app": ds}},
			Spec:       corev1.PodSpec{NodeName: node},
			Status:     corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: ready}}},
		}
	}
	client := fake.NewSimpleClientset(
		ds("two", corev1.Container{Name: "a", Args: []string{"run"}}, corev1.Container{Name: "b"}),
		ds("other", corev1.Container{Name: "x", Args: []string{"serve"}}),
		ds("starting", corev1.Container{Name: "nodeagent", Args: []string{"run"}}),
		agentPod("starting-1", "starting", "n1", corev1.ConditionFalse),
		ds("ok", corev1.Container{Name: "nodeagent", Args: []string{"run"}}),
		agentPod("ok-2", "ok", "n2", corev1.ConditionTrue),
		agentPod("ok-1", "ok", "n1", corev1.ConditionTrue),
		agentPod("ok-3", "ok", "n3", corev1.ConditionFalse),
	)
	for ref, want := range map[string]string{
		"nodeagent":          "want namespace/name",
		"nodeagent/missing":  "not found",
		"nodeagent/two":      "none is named nodeagent",
		"nodeagent/other":    "does not run `nodeagent run`",
		"nodeagent/starting": "has no ready pods",
		"nodeagent/a/b":      "want namespace/name",
	} {
		if _, err := findDaemonSet(context.Background(), client, ref); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want an error saying %q", ref, err, want)
		}
	}
	target, err := findDaemonSet(context.Background(), client, "nodeagent/ok")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(target.nodes, []string{"n1", "n2"}) {
		t.Errorf("nodes %v, want the ready agents' n1 and n2, sorted", target.nodes)
	}
}
