package configmapcache

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nodeagent-io/nodeagent/pkg/model"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
)

func TestTTLBoundary(t *testing.T) {
	m, client, clk := newTestManager(t, model.StrategyCache, InvalidateFirstReference, 5*time.Minute, configMap("cm"))
	m.RegisterPod(podUsing("a", "cm"))
	read := func() {
		t.Helper()
		if _, err := m.GetConfigMap(context.Background(), ns, "cm"); err != nil {
			t.Fatal(err)
		}
	}
	read()
	clk.Step(4*time.Minute + 59*time.Second)
	read()
	if got := getCounts(client); got[""] != 1 || got["0"] != 0 {
		t.Fatalf("within the TTL: got %v, want one quorum GET only", got)
	}
	clk.Step(time.Second)
	read()
	read()
	if got := getCounts(client); got[""] != 1 || got["0"] != 1 {
		t.Fatalf("at the TTL: got %v, want one more GET at resourceVersion 0", got)
	}
}

// 100 concurrent readers of 10 stale keys send exactly 10 GETs.
func TestConcurrentReadersShareOneGet(t *testing.T) {
	var objects []runtime.Object
	for i := range 10 {
		objects = append(objects, configMap(fmt.Sprintf("cm-%d", i)))
	}
	m, client, _ := newTestManager(t, model.StrategyCache, InvalidateFirstReference, time.Minute, objects...)
	for i := range 10 {
		m.RegisterPod(podUsing(fmt.Sprint(i), fmt.Sprintf("cm-%d", i)))
	}
	var wg sync.WaitGroup
	for i := range 100 {
		wg.Go(func() {
			if _, err := m.GetConfigMap(context.Background(), ns, fmt.Sprintf("cm-%d", i%10)); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if got := getCounts(client); got[""] != 10 || len(got) != 1 {
		t.Errorf("got %v, want exactly 10 quorum GETs", got)
	}
}

// failNext makes the fake client's next ConfigMap GETs fail with err.
func failGets(client *fake.Clientset, err error) {
	client.PrependReactor("get", "configmaps", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, err
	})
}

func TestErrorsAreNeverFresh(t *testing.T) {
	t.Run("a server error keeps the cached object and retries at resourceVersion 0", func(t *testing.T) {
		m, client, clk := newTestManager(t, model.StrategyCache, InvalidateFirstReference, time.Minute, configMap("cm"))
		m.RegisterPod(podUsing("a", "cm"))
		if _, err := m.GetConfigMap(context.Background(), ns, "cm"); err != nil {
			t.Fatal(err)
		}
		failGets(client, apierrors.NewServiceUnavailable("etcd is down"))
		clk.Step(time.Minute)
		for range 2 {
			cm, err := m.GetConfigMap(context.Background(), ns, "cm")
			if err != nil || cm.Data["k"] != "cm" {
				t.Fatalf("got %v, %v; want the cached object and no error", cm, err)
			}
		}
		// The timestamp did not move: both reads after expiry sent a GET.
		if got := getCounts(client); got[""] != 1 || got["0"] != 2 {
			t.Errorf("got %v, want 1 quorum GET and 2 retries at resourceVersion 0", got)
		}
	})
	t.Run("a server error with nothing cached is returned and nothing is cached", func(t *testing.T) {
		m, client, _ := newTestManager(t, model.StrategyCache, InvalidateFirstReference, time.Minute, configMap("cm"))
		m.RegisterPod(podUsing("a", "cm"))
		failGets(client, apierrors.NewServiceUnavailable("etcd is down"))
		if _, err := m.GetConfigMap(context.Background(), ns, "cm"); !apierrors.IsServiceUnavailable(err) {
			t.Fatalf("got %v, want ServiceUnavailable", err)
		}
		client.ReactionChain = client.ReactionChain[1:]
		if _, err := m.GetConfigMap(context.Background(), ns, "cm"); err != nil {
			t.Fatalf("after recovery: %v", err)
		}
		if got := getCounts(client); got[""] != 2 {
			t.Errorf("got %v, want 2 quorum GETs", got)
		}
	})
	t.Run("NotFound is cached as an error and refetched by quorum read every time", func(t *testing.T) {
		m, client, _ := newTestManager(t, model.StrategyCache, InvalidateFirstReference, time.Hour)
		m.RegisterPod(podUsing("a", "missing"))
		for range 3 {
			if _, err := m.GetConfigMap(context.Background(), ns, "missing"); !apierrors.IsNotFound(err) {
				t.Fatalf("got %v, want NotFound", err)
			}
		}
		if got := getCounts(client); got[""] != 3 || got["0"] != 0 {
			t.Errorf("got %v, want 3 quorum GETs", got)
		}
	})
	t.Run("a ConfigMap deleted after caching turns into NotFound", func(t *testing.T) {
		m, client, clk := newTestManager(t, model.StrategyCache, InvalidateFirstReference, time.Minute, configMap("cm"))
		m.RegisterPod(podUsing("a", "cm"))
		if _, err := m.GetConfigMap(context.Background(), ns, "cm"); err != nil {
			t.Fatal(err)
		}
		failGets(client, apierrors.NewNotFound(corev1.Resource("configmaps"), "cm"))
		clk.Step(time.Minute)
		if _, err := m.GetConfigMap(context.Background(), ns, "cm"); !apierrors.IsNotFound(err) {
			t.Fatalf("got %v, want NotFound", err)
		}
	})
}

func TestNeverGoesBackwards(t *testing.T) {
	newer := configMap("cm")
	newer.ResourceVersion, newer.Data = "20", map[string]string{"k": "new"}
	m, client, clk := newTestManager(t, model.StrategyCache, InvalidateFirstReference, time.Minute, newer)
	m.RegisterPod(podUsing("a", "cm"))
	if _, err := m.GetConfigMap(context.Background(), ns, "cm"); err != nil {
		t.Fatal(err)
	}
	older := configMap("cm")
	older.ResourceVersion, older.Data = "10", map[string]string{"k": "old"}
	client.PrependReactor("get", "configmaps", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, older, nil // a lagging watch cache
	})
	clk.Step(time.Minute)
	cm, err := m.GetConfigMap(context.Background(), ns, "cm")
	if err != nil || cm.ResourceVersion != "20" {
		t.Fatalf("got %v (rv %q), want resourceVersion 20 kept", err, cm.GetResourceVersion())
	}
}

func TestUnregisteredNameIsAnError(t *testing.T) {
	for _, strategy := range []model.Strategy{model.StrategyCache, model.StrategyWatch} {
		m, _, _ := newTestManager(t, strategy, InvalidateFirstReference, time.Minute, configMap("cm"))
		if _, err := m.GetConfigMap(context.Background(), ns, "cm"); err == nil {
			t.Errorf("%s: GetConfigMap of an unregistered name succeeded", strategy)
		}
	}
}

type countingRecorder struct {
	mu      sync.Mutex
	gets    map[string]int
	lookups map[Lookup]int
}

func (r *countingRecorder) GetSent(_ model.Strategy, rv string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.gets[rv]++
}

func (r *countingRecorder) Lookup(outcome Lookup) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lookups[outcome]++
}

func TestRecorderSeesEveryGetAndLookup(t *testing.T) {
	client := fake.NewClientset(configMap("cm"))
	rec := &countingRecorder{gets: map[string]int{}, lookups: map[Lookup]int{}}
	m, err := New(Options{Strategy: model.StrategyCache, Invalidation: InvalidateEverySync, ConfigMaps: fakeConfigMaps(client), Recorder: rec,
		TTL: func() time.Duration { return time.Hour }})
	if err != nil {
		t.Fatal(err)
	}
	pod := podUsing("a", "cm")
	m.RegisterPod(pod)
	m.GetConfigMap(context.Background(), ns, "cm") // miss
	m.GetConfigMap(context.Background(), ns, "cm") // fresh
	m.RegisterPod(pod)
	m.GetConfigMap(context.Background(), ns, "cm") // invalidated
	wantLookups := map[Lookup]int{LookupMiss: 1, LookupFresh: 1, LookupInvalidated: 1}
	if fmt.Sprint(rec.lookups) != fmt.Sprint(wantLookups) {
		t.Errorf("lookups: got %v, want %v", rec.lookups, wantLookups)
	}
	if got := getCounts(client); fmt.Sprint(rec.gets) != fmt.Sprint(got) {
		t.Errorf("recorded GETs %v differ from GETs the client sent %v", rec.gets, got)
	}
}
