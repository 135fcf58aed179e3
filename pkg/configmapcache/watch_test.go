package configmapcache

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/nodeagent-io/nodeagent/internal/testutil"
	"github.com/nodeagent-io/nodeagent/pkg/model"
)

func TestWatchStrategySendsNoGets(t *testing.T) {
	client := fake.NewClientset(configMap("cm"))
	var changes atomic.Int32
	m, err := New(Options{Strategy: model.StrategyWatch, ConfigMaps: fakeConfigMaps(client), OnChange: func(string, string) { changes.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	pod := podUsing("a", "cm")
	for range 5 {
		m.RegisterPod(pod)
		cm, err := m.GetConfigMap(context.Background(), ns, "cm")
		if err != nil || cm.Data["k"] != "cm" {
			t.Fatalf("got %v, %v", cm, err)
		}
	}
	if got := getCounts(client); len(got) != 0 {
		t.Fatalf("watch strategy sent GETs: %v", got)
	}

	// An update arrives through the watch and is announced.
	updated := configMap("cm")
	updated.Data["k"] = "v2"
	if _, err := client.CoreV1().ConfigMaps(ns).Update(context.Background(), updated, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, "the update to reach the store", func() bool {
		cm, err := m.GetConfigMap(context.Background(), ns, "cm")
		return err == nil && cm.Data["k"] == "v2"
	})
	if changes.Load() == 0 {
		t.Error("OnChange was not called for the update")
	}

	// A deletion turns into NotFound.
	if err := client.CoreV1().ConfigMaps(ns).Delete(context.Background(), "cm", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, "the deletion to reach the store", func() bool {
		_, err := m.GetConfigMap(context.Background(), ns, "cm")
		return apierrors.IsNotFound(err)
	})
	if got := getCounts(client); len(got) != 0 {
		t.Fatalf("watch strategy sent GETs: %v", got)
	}
	m.UnregisterPod(pod)
	if _, err := m.GetConfigMap(context.Background(), ns, "cm"); err == nil {
		t.Error("GetConfigMap after the last reference went succeeded")
	}
}

func TestWatchStopsForImmutableConfigMaps(t *testing.T) {
	immutable := configMap("frozen")
	immutable.Immutable = new(true)
	client := fake.NewClientset(immutable)
	m, err := New(Options{Strategy: model.StrategyWatch, ConfigMaps: fakeConfigMaps(client)})
	if err != nil {
		t.Fatal(err)
	}
	m.RegisterPod(podUsing("a", "frozen"))
	if _, err := m.GetConfigMap(context.Background(), ns, "frozen"); err != nil {
		t.Fatal(err)
	}
	if running := m.(*registry).store.(*configMapWatchStore).running(); running != 0 {
		t.Errorf("%d reflectors run; the one of an immutable ConfigMap should have stopped", running)
	}
	// The last state stays readable.
	if cm, err := m.GetConfigMap(context.Background(), ns, "frozen"); err != nil || cm.Name != "frozen" {
		t.Errorf("after stop: got %v, %v", cm, err)
	}
}

func TestWatchStopEndsEveryWatch(t *testing.T) {
	client := fake.NewClientset(configMap("cm"))
	var changes atomic.Int32
	m, err := New(Options{Strategy: model.StrategyWatch, ConfigMaps: fakeConfigMaps(client), OnChange: func(string, string) { changes.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	m.RegisterPod(podUsing("a", "cm"))
	if _, err := m.GetConfigMap(context.Background(), ns, "cm"); err != nil {
		t.Fatal(err)
	}
	m.Stop()
	before := changes.Load()
	updated := configMap("cm")
	updated.Data["k"] = "after-stop"
	if _, err := client.CoreV1().ConfigMaps(ns).Update(context.Background(), updated, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // time for a watch event that must not come
	if changes.Load() != before {
		t.Error("a change was delivered after Stop")
	}
	if _, err := m.GetConfigMap(context.Background(), ns, "cm"); err == nil {
		t.Error("GetConfigMap after Stop succeeded")
	}
}

// A ConfigMap that only containers' environments reference is read once, at
// the pod's first sync; its watch stops after 5·S without a read (at least a
// minute), as the kubelet's does, and a later read starts it again.
func TestWatchOfAnIdleConfigMapStops(t *testing.T) {
	client := fake.NewClientset(configMap("env"), configMap("vol"))
	clk := testingclock.NewFakeClock(time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC))
	m, err := New(Options{Strategy: model.StrategyWatch, ConfigMaps: fakeConfigMaps(client), Clock: clk, SyncFrequency: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Stop()
	store := m.(*registry).store.(*configMapWatchStore)
	pod := podUsing("a", "vol")
	pod.Spec.Containers = []corev1.Container{{Name: "c", EnvFrom: []corev1.EnvFromSource{{
		ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "env"}}}}}}
	m.RegisterPod(pod)
	for _, name := range []string{"env", "vol"} {
		if _, err := m.GetConfigMap(context.Background(), ns, name); err != nil {
			t.Fatal(err)
		}
	}
	// The volume's ConfigMap is read on every remount, the env one never.
	for step := range 5 {
		clk.Step(30 * time.Second)
		if _, err := m.GetConfigMap(context.Background(), ns, "vol"); err != nil {
			t.Fatal(err)
		}
		store.recycleIdle()
		if want := 2; step < 4 && store.running() != want {
			t.Fatalf("after %d s: %d watches, want %d (not idle for 5·S yet)", 30*(step+1), store.running(), want)
		}
	}
	clk.Step(time.Second)
	store.recycleIdle()
	if got := store.running(); got != 1 {
		t.Fatalf("after 5·S + 1 s without a read: %d watches, want 1", got)
	}
	if cm, err := m.GetConfigMap(context.Background(), ns, "env"); err != nil || cm.Name != "env" {
		t.Fatalf("reading the idle ConfigMap: %v, %v", cm, err)
	}
	if got := store.running(); got != 2 {
		t.Errorf("after a read: %d watches, want 2 (restarted)", got)
	}
	if got := getCounts(client); len(got) != 0 {
		t.Errorf("GETs sent: %v", got)
	}
}

// The reflectors ask for watches of at least 30 minutes, as the kubelet's.
func TestWatchTimeoutIsAtLeastThirtyMinutes(t *testing.T) {
	client := fake.NewClientset(configMap("cm"))
	m, err := New(Options{Strategy: model.StrategyWatch, ConfigMaps: fakeConfigMaps(client)})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Stop()
	m.RegisterPod(podUsing("a", "cm"))
	if _, err := m.GetConfigMap(context.Background(), ns, "cm"); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, "a watch", func() bool {
		for _, a := range client.Actions() {
			if w, ok := a.(clienttesting.WatchActionImpl); ok && w.GetResource().Resource == "configmaps" {
				return true
			}
		}
		return false
	})
	for _, a := range client.Actions() {
		w, ok := a.(clienttesting.WatchActionImpl)
		if !ok {
			continue
		}
		timeout := w.ListOptions.TimeoutSeconds
		if timeout == nil || *timeout < 30*60 || *timeout > 60*60 {
			t.Errorf("watch timeout %v s, want between 30 and 60 minutes", timeout)
		}
	}
}
