package configmapcache

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/nodeagent-io/nodeagent/pkg/model"
	"github.com/nodeagent-io/nodeagent/pkg/podrefs"
)

const ns = "default"

func configMap(name string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string]string{"k": name}}
}

func podUsing(uid string, configMaps ...string) *corev1.Pod {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pod-" + uid, UID: types.UID(uid)}}
	for i, name := range configMaps {
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{
			Name:         fmt.Sprintf("vol-%d", i),
			VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: name}}},
		})
	}
	return pod
}

// getCounts counts the ConfigMap GETs a fake client received, by
// resourceVersion ("" is a quorum read).
func getCounts(client *fake.Clientset) map[string]int {
	counts := map[string]int{}
	for _, a := range client.Actions() {
		if get, ok := a.(clienttesting.GetActionImpl); ok && get.GetResource().Resource == "configmaps" {
			counts[get.GetOptions.ResourceVersion]++
		}
	}
	return counts
}

func newTestManager(t *testing.T, strategy model.Strategy, inv Invalidation, ttl time.Duration, objects ...runtime.Object) (Manager, *fake.Clientset, *testingclock.FakeClock) {
	t.Helper()
	client := fake.NewClientset(objects...)
	clk := testingclock.NewFakeClock(time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC))
	m, err := New(Options{Strategy: strategy, Invalidation: inv, ConfigMaps: fakeConfigMaps(client), Clock: clk, TTL: func() time.Duration { return ttl }})
	if err != nil {
		t.Fatal(err)
	}
	return m, client, clk
}

// simulateSyncs plays what the pod workers and the volume manager do: each
// pod is synced (RegisterPod, then a remount that reads each of its
// ConfigMaps) every interval, pod i first at offset i*stagger, for the
// duration given.
func simulateSyncs(t *testing.T, m Manager, clk *testingclock.FakeClock, pods []*corev1.Pod, interval, stagger, duration time.Duration) {
	t.Helper()
	start := clk.Now()
	next := make([]time.Time, len(pods))
	for i := range pods {
		next[i] = start.Add(time.Duration(i) * stagger)
	}
	for step := time.Duration(0); step <= duration; step += time.Second {
		clk.SetTime(start.Add(step))
		for i, pod := range pods {
			if clk.Now().Before(next[i]) {
				continue
			}
			m.RegisterPod(pod)
			for name := range podrefs.ConfigMapNames(pod) {
				if _, err := m.GetConfigMap(context.Background(), pod.Namespace, name); err != nil {
					t.Fatalf("GetConfigMap(%s) at %s: %v", name, step, err)
				}
			}
			next[i] = next[i].Add(interval)
		}
	}
}

// The scenario of the issue: 10 pods with their own ConfigMap, S = 60 s
// (a mean sync interval of 75 s), T = 300 s, 30 simulated minutes.
func TestGetCountsOverThirtyMinutes(t *testing.T) {
	const pods = 10
	const interval, duration, ttl = 75 * time.Second, 30 * time.Minute, 300 * time.Second
	syncsPerPod := int(duration/interval) + 1 // at 0, 75 s, ..., 1800 s
	var objects []runtime.Object
	var podList []*corev1.Pod
	for i := range pods {
		objects = append(objects, configMap(fmt.Sprintf("cm-%d", i)))
		podList = append(podList, podUsing(fmt.Sprint(i), fmt.Sprintf("cm-%d", i)))
	}
	tests := []struct {
		name     string
		strategy model.Strategy
		inv      Invalidation
		want     map[string]int
	}{
		{"every-sync: one quorum GET per pod sync", model.StrategyCache, InvalidateEverySync,
			map[string]int{"": pods * syncsPerPod}},
		// One quorum GET per pod at its first reference; then a refresh
		// at resourceVersion 0 at the first sync at or after each TTL:
		// t = 300, 600, ..., 1800 s, six per pod.
		{"first-reference: quorum GET once, then TTL refreshes at resourceVersion 0", model.StrategyCache, InvalidateFirstReference,
			map[string]int{"": pods, "0": pods * int(duration/ttl)}},
		{"get: a quorum GET per remount", model.StrategyGet, "",
			map[string]int{"": pods * syncsPerPod}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, client, clk := newTestManager(t, tt.strategy, tt.inv, ttl, objects...)
			simulateSyncs(t, m, clk, podList, interval, 0, duration)
			if got := getCounts(client); fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("GETs by resourceVersion: got %v, want %v", got, tt.want)
			}
		})
	}
}

// Two pods that share one ConfigMap share its entry. Each pod's first
// reference is a quorum read (b's, at 40 s, drops a's fresh copy, as in the
// kubelet); after that the two pods' syncs together refresh it once per TTL:
// the first sync at or after 340, 640, ... s, that is 375, 675, ..., 1575 s.
func TestPodsSharingAConfigMapShareRefreshes(t *testing.T) {
	m, client, clk := newTestManager(t, model.StrategyCache, InvalidateFirstReference, 300*time.Second, configMap("shared"))
	pods := []*corev1.Pod{podUsing("a", "shared"), podUsing("b", "shared")}
	simulateSyncs(t, m, clk, pods, 75*time.Second, 40*time.Second, 30*time.Minute)
	want := map[string]int{"": 2, "0": 5}
	if got := getCounts(client); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("GETs by resourceVersion: got %v, want %v", got, want)
	}
}

// A TTL of zero is a TTL of zero: every remount refreshes, from the watch
// cache after the first read.
func TestZeroTTLRefreshesOnEveryRemount(t *testing.T) {
	m, client, clk := newTestManager(t, model.StrategyCache, InvalidateFirstReference, 0, configMap("cm"))
	simulateSyncs(t, m, clk, []*corev1.Pod{podUsing("a", "cm")}, 75*time.Second, 0, 10*75*time.Second)
	want := map[string]int{"": 1, "0": 10}
	if got := getCounts(client); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("GETs by resourceVersion: got %v, want %v", got, want)
	}
}

// Names a new version of a pod adds are fetched by quorum read; names it
// drops are released; unchanged names keep their cache.
func TestRegisterPodFollowsReferenceChanges(t *testing.T) {
	m, client, _ := newTestManager(t, model.StrategyCache, InvalidateFirstReference, time.Hour, configMap("a"), configMap("b"))
	m.RegisterPod(podUsing("p", "a"))
	if _, err := m.GetConfigMap(context.Background(), ns, "a"); err != nil {
		t.Fatal(err)
	}
	m.RegisterPod(podUsing("p", "a", "b"))
	for _, name := range []string{"a", "b"} {
		if _, err := m.GetConfigMap(context.Background(), ns, name); err != nil {
			t.Fatal(err)
		}
	}
	if got := getCounts(client); got[""] != 2 || got["0"] != 0 {
		t.Errorf("GETs: got %v, want 2 quorum reads (a once, b once)", got)
	}
	m.RegisterPod(podUsing("p", "b"))
	if _, err := m.GetConfigMap(context.Background(), ns, "a"); err == nil {
		t.Error("a is no longer referenced, but GetConfigMap(a) succeeded")
	}
	m.UnregisterPod(podUsing("p", "b"))
	if _, err := m.GetConfigMap(context.Background(), ns, "b"); err == nil {
		t.Error("after UnregisterPod, GetConfigMap(b) succeeded")
	}
}

func TestNewRejectsUnknownModes(t *testing.T) {
	client := fake.NewClientset()
	for _, opts := range []Options{
		{Strategy: "poll", ConfigMaps: fakeConfigMaps(client)},
		{Strategy: model.StrategyCache, Invalidation: "sometimes", ConfigMaps: fakeConfigMaps(client)},
		{Strategy: model.StrategyCache, Invalidation: InvalidateEverySync},
	} {
		if _, err := New(opts); err == nil {
			t.Errorf("New(%+v) succeeded, want an error", opts)
		}
	}
}

// A negative TTL, which the kubelet takes as it is, makes no entry fresh:
// every read refreshes at resourceVersion "0".
func TestNegativeTTLIsNeverFresh(t *testing.T) {
	m, client, clk := newTestManager(t, model.StrategyCache, InvalidateFirstReference, -15*time.Second, configMap("cm"))
	m.RegisterPod(podUsing("a", "cm"))
	for range 4 {
		if _, err := m.GetConfigMap(context.Background(), ns, "cm"); err != nil {
			t.Fatal(err)
		}
		clk.Step(time.Second)
	}
	if got := getCounts(client); got[""] != 1 || got["0"] != 3 {
		t.Errorf("GETs by resourceVersion: %v, want 1 quorum read and 3 at resourceVersion 0", got)
	}
}
