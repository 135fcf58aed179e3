package daemonset

import (
	"context"
	"io"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nodeagent-io/nodeagent/internal/progress"
	"github.com/nodeagent-io/nodeagent/pkg/compare"
	"github.com/nodeagent-io/nodeagent/pkg/compare/modes"
	"github.com/nodeagent-io/nodeagent/pkg/compare/results"
	"github.com/nodeagent-io/nodeagent/pkg/model"
	"github.com/nodeagent-io/nodeagent/pkg/podrefs/inventory"
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
// agents' nodes, outside the run's namespace; not those of terminating
// pods, which the agents are taking down.
func TestServedPods(t *testing.T) {
	terminating := podWithConfigMaps("c", "leaving", "n1", corev1.PodRunning, []string{"cfg"}, nil)
	terminating.DeletionTimestamp = &metav1.Time{}
	client := fake.NewSimpleClientset(
		terminating,
		podWithConfigMaps("a", "web", "n1", corev1.PodRunning, []string{"cfg", "extra"}, []string{"unused"}),
		podWithConfigMaps("b", "web", "n1", corev1.PodPending, []string{"cfg"}, nil),
		podWithConfigMaps("a", "done", "n1", corev1.PodSucceeded, []string{"cfg"}, nil),
		podWithConfigMaps("a", "elsewhere", "n9", corev1.PodRunning, []string{"cfg"}, nil),
		podWithConfigMaps("a", "nothing-mounted", "n2", corev1.PodRunning, nil, []string{"cfg"}),
		podWithConfigMaps("run", "pod-00000", "n1", corev1.PodRunning, []string{"cm-00000-0"}, nil),
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "cfg"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "extra"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "b", Name: "cfg"}},
	)
	inv, err := inventory.List(context.Background(), client, "", 500, nil)
	if err != nil {
		t.Fatal(err)
	}
	served := servedPods(inv, []string{"n1", "n2"}, "run")
	if len(served) != 2 || len(served["n1"]) != 2 || len(served["n2"]) != 0 {
		t.Fatalf("served = %+v, want the two unfinished pods on n1 with mounted ConfigMaps, and n2 with none", served)
	}
	// One ConfigMap name in two namespaces is two cache entries.
	refs := model.Node{Pods: served["n1"]}.ReadersPerObject()
	cm := func(namespace, name string) model.Object {
		return model.Object{Kind: model.ConfigMap, Namespace: namespace, Name: name}
	}
	if len(refs) != 3 || refs[cm("a", "cfg")] != 1 || refs[cm("b", "cfg")] != 1 || refs[cm("a", "extra")] != 1 {
		t.Errorf("n1's served pods reference %v; want a/cfg, a/extra, b/cfg", refs)
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
	selector, _ := labels.Parse("pool=general")
	got, err := nodesMatching(context.Background(), client, selector, []string{"a", "b", "c"})
	if err != nil || !slices.Equal(got, []string{"a", "c"}) {
		t.Errorf("nodesMatching = %v, %v; want the agents' nodes in pool general, a and c", got, err)
	}
	if _, err := New(Options{DaemonSet: "nodeagent/nodeagent", NodeSelector: "pool=("}); err == nil {
		t.Error("a malformed selector was accepted")
	}
}

// A DaemonSet run takes S, the agents' QPS and the TTL from the cluster,
// defaults the phase to four mean sync intervals, and refuses watch
// without the RBAC it needs.
func TestPlanReadsTheCluster(t *testing.T) {
	objects := func() []runtime.Object {
		return []runtime.Object{
			&appsv1.DaemonSet{
				ObjectMeta: metav1.ObjectMeta{Namespace: "nodeagent", Name: "nodeagent"},
				Spec: appsv1.DaemonSetSpec{
					Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "nodeagent"}},
					Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{
						{Name: "nodeagent", Args: []string{"run", "--sync-frequency=1m", "--kube-api-qps", "20"}},
					}}},
				},
			},
			&corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Namespace: "nodeagent", Name: "agent-1", Labels: map[string]string{"app": "nodeagent"}},
				Spec:       corev1.PodSpec{NodeName: "n1"},
				Status:     corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
			},
			&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Annotations: map[string]string{corev1.ObjectTTLAnnotationKey: "15"}}},
		}
	}
	run := compare.RunInfo{Namespace: "run", Scenario: compare.DefaultScenario(), Progress: progress.New(io.Discard)}
	run.Scenario.Nodes, run.Scenario.PhaseDuration = 0, 0
	run.Scenario.Modes = []modes.Mode{modes.EverySync, modes.FirstReference}
	plan := func() (compare.Plan, error) {
		f, err := New(Options{DaemonSet: "nodeagent/nodeagent"})
		if err != nil {
			t.Fatal(err)
		}
		run.Client = fake.NewSimpleClientset(objects()...)
		return f.Plan(context.Background(), run)
	}
	p, err := plan()
	if err != nil {
		t.Fatal(err)
	}
	s, nodes := p.Scenario, p.Nodes
	// S = 60 s: mean interval 1.25·60 + 0.5 = 75.5 s, four of them 302 s.
	if s.Nodes != 1 || s.SyncFrequency != time.Minute || s.AgentQPS != 20 || s.TTL != 15*time.Second || s.PhaseDuration != 302*time.Second {
		t.Errorf("scenario %+v: want 1 node, S 1m and QPS 20 from the args, TTL 15s from the node, phase 302s", s)
	}
	if len(nodes) != 1 || nodes[0].Name != "n1" || len(nodes[0].Pods) != run.Scenario.PodsPerNode || p.SimulatedNodes {
		t.Errorf("layout %+v: want the run's pods on n1", nodes)
	}

	// The fake apiserver allows nothing in a SubjectAccessReview.
	run.Scenario.Modes = []modes.Mode{modes.Watch}
	_, err = plan()
	if err == nil || !strings.Contains(err.Error(), "deploy/overlays/watch") {
		t.Errorf("watch without RBAC: got %v, want a refusal naming deploy/overlays/watch", err)
	}
}

// What the agents keep on disk, which a phase's warm-up waits for and the
// report counts: not a volume whose required ConfigMap is missing (it
// never mounts: waiting for it timed a run out), not a Secret volume, and
// a volume once however many objects it reads.
func TestServedVolumesAreTheAgentsOnDisk(t *testing.T) {
	secret := podWithConfigMaps("a", "secret", "n1", corev1.PodRunning, []string{"cfg"}, nil)
	secret.Spec.Volumes = append(secret.Spec.Volumes, corev1.Volume{Name: "s", VolumeSource: corev1.VolumeSource{
		Secret: &corev1.SecretVolumeSource{SecretName: "creds"}}})
	secret.Spec.Containers[0].VolumeMounts = append(secret.Spec.Containers[0].VolumeMounts, corev1.VolumeMount{Name: "s"})
	projected := podWithConfigMaps("a", "projected", "n1", corev1.PodRunning, nil, nil)
	projected.Spec.Volumes = []corev1.Volume{{Name: "p", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		Sources: []corev1.VolumeProjection{
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}},
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "extra"}}},
			{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "missing-secret"}}},
		}}}}}
	projected.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "p"}}
	client := fake.NewSimpleClientset(secret, projected,
		podWithConfigMaps("a", "broken", "n1", corev1.PodRunning, []string{"cfg", "gone"}, nil),
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "cfg"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "extra"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "creds"}},
	)
	inv, err := inventory.List(context.Background(), client, "", 500, nil)
	if err != nil {
		t.Fatal(err)
	}
	f := &Fleet{served: servedPods(inv, []string{"n1"}, "run")}
	volumes := map[string]int{}
	for _, p := range f.served["n1"] {
		volumes[p.Name] = p.Volumes
	}
	// secret: cfg (its Secret volume is the kubelet's); projected: one
	// volume of three reads, whose missing Secret source the agent does
	// not serve; broken: cfg, not gone.
	if want := map[string]int{"a/secret": 1, "a/projected": 1, "a/broken": 1}; !maps.Equal(volumes, want) {
		t.Errorf("volumes the agents keep: %v, want %v", volumes, want)
	}
	var r results.ScenarioReport
	f.describe(&r)
	if r.ServedPods != 3 || r.ServedVolumes != 3 {
		t.Errorf("report: %d pods, %d volumes; want 3 and 3", r.ServedPods, r.ServedVolumes)
	}
}
