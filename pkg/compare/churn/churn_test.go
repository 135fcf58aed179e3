package churn

import (
	"context"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/nodeagent-io/nodeagent/pkg/compare/objects"
	"github.com/nodeagent-io/nodeagent/pkg/model"
)

// A churn's pods arrive on their nodes reading their node's pool and the
// shared object, each is deleted, none is left once Run returns, and the
// arrivals it reports are those it created.
func TestChurnCreatesDeletesAndCounts(t *testing.T) {
	client := fake.NewClientset()
	var mu sync.Mutex
	created := map[string]*corev1.Pod{}
	deleted := 0
	client.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		pod := a.(k8stesting.CreateAction).GetObject().(*corev1.Pod)
		mu.Lock()
		created[pod.Name] = pod.DeepCopy()
		mu.Unlock()
		return false, nil, nil
	})
	client.PrependReactor("delete", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		deleted++
		mu.Unlock()
		return false, nil, nil
	})
	cm := func(name string) model.Object {
		return model.Object{Kind: model.ConfigMap, Namespace: "ns", Name: name}
	}
	pools := map[string][]model.Object{"a": {cm("a0"), cm("a1"), cm("a2")}, "b": {cm("b0"), cm("b1"), cm("b2")}}
	rootCA := cm(objects.RootCAConfigMap)
	c := New(Config{Client: client, Namespace: "ns", Pools: pools, PerPod: 2, Shared: &rootCA,
		Rate: 100, Lifetime: 5 * time.Millisecond, Seed: 1})
	from := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := c.Run(ctx); err != nil {
		t.Fatal(err)
	}
	to := time.Now()

	left, err := client.CoreV1().Pods("ns").List(context.Background(), metav1.ListOptions{})
	if err != nil || len(left.Items) != 0 {
		t.Fatalf("%d pods left after Run (%v)", len(left.Items), err)
	}
	if len(created) < 10 || deleted == 0 {
		t.Fatalf("%d pods created, %d deleted: want a stream of them", len(created), deleted)
	}
	for _, pod := range created {
		if pod.Labels[objects.ArrivingLabel] != "true" || len(pod.Spec.Volumes) != 2 {
			t.Fatalf("pod %s: labels %v, %d volumes; want the arriving label and 2 of its pool", pod.Name, pod.Labels, len(pod.Spec.Volumes))
		}
		for _, v := range pod.Spec.Volumes {
			if !slices.Contains(pools[pod.Spec.NodeName], cm(v.ConfigMap.Name)) {
				t.Errorf("pod %s on %s reads %s, not of its node's pool", pod.Name, pod.Spec.NodeName, v.ConfigMap.Name)
			}
		}
	}
	byNode, pods := c.Arrivals(from, to)
	if pods != len(created) {
		t.Errorf("Arrivals counts %d pods, %d were created", pods, len(created))
	}
	seconds := to.Sub(from).Seconds()
	for node, arrivals := range byNode {
		var shared, drawn float64
		for _, a := range arrivals {
			if a.Object == rootCA {
				shared += a.Rate
			} else {
				drawn += a.Rate
			}
		}
		// Each pod reads two of its pool and the shared object once.
		if math.Abs(drawn-2*shared) > 1e-9 || shared*seconds < 1 {
			t.Errorf("node %s: %.2f/s of its pool against %.2f/s of %s, want twice as many", node, drawn, shared, objects.RootCAConfigMap)
		}
	}
}
