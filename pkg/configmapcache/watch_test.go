package configmapcache

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestWatchStrategySendsNoGets(t *testing.T) {
	client := fake.NewClientset(configMap("cm"))
	var changes atomic.Int32
	m, err := New(Options{Strategy: StrategyWatch, Client: client, OnChange: func(string, string) { changes.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	pod := podUsing("a", "cm")
	for range 5 {
		m.RegisterPod(pod)
		cm, err := m.GetConfigMap(ns, "cm")
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
	waitFor(t, "the update to reach the store", func() bool {
		cm, err := m.GetConfigMap(ns, "cm")
		return err == nil && cm.Data["k"] == "v2"
	})
	if changes.Load() == 0 {
		t.Error("OnChange was not called for the update")
	}

	// A deletion turns into NotFound.
	if err := client.CoreV1().ConfigMaps(ns).Delete(context.Background(), "cm", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the deletion to reach the store", func() bool {
		_, err := m.GetConfigMap(ns, "cm")
		return apierrors.IsNotFound(err)
	})
	if got := getCounts(client); len(got) != 0 {
		t.Fatalf("watch strategy sent GETs: %v", got)
	}
	m.UnregisterPod(pod)
	if _, err := m.GetConfigMap(ns, "cm"); err == nil {
		t.Error("GetConfigMap after the last reference went succeeded")
	}
}

func TestWatchStopsForImmutableConfigMaps(t *testing.T) {
	immutable := configMap("frozen")
	immutable.Immutable = new(true)
	client := fake.NewClientset(immutable)
	m, err := New(Options{Strategy: StrategyWatch, Client: client})
	if err != nil {
		t.Fatal(err)
	}
	m.RegisterPod(podUsing("a", "frozen"))
	if _, err := m.GetConfigMap(ns, "frozen"); err != nil {
		t.Fatal(err)
	}
	item := m.(*registry).store.(*watchStore).items[objectKey{ns, "frozen"}]
	if !item.stopped.Load() {
		t.Error("the reflector of an immutable ConfigMap was not stopped")
	}
	// The last state stays readable.
	if cm, err := m.GetConfigMap(ns, "frozen"); err != nil || cm.Name != "frozen" {
		t.Errorf("after stop: got %v, %v", cm, err)
	}
}

func TestWatchStopEndsEveryWatch(t *testing.T) {
	client := fake.NewClientset(configMap("cm"))
	var changes atomic.Int32
	m, err := New(Options{Strategy: StrategyWatch, Client: client, OnChange: func(string, string) { changes.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	m.RegisterPod(podUsing("a", "cm"))
	if _, err := m.GetConfigMap(ns, "cm"); err != nil {
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
	if _, err := m.GetConfigMap(ns, "cm"); err == nil {
		t.Error("GetConfigMap after Stop succeeded")
	}
}
