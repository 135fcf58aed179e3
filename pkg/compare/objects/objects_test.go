package objects

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// runParallel runs every job and returns nil, or the first error.
func TestRunParallel(t *testing.T) {
	var ran atomic.Int64
	jobs := make([]func() error, 120)
	for i := range jobs {
		jobs[i] = func() error { ran.Add(1); return nil }
	}
	var mu sync.Mutex
	reported := 0
	err := runParallel(context.Background(), jobs, 4, func(done, total int) {
		mu.Lock()
		defer mu.Unlock()
		reported = max(reported, done)
	}, 10, 130)
	if err != nil || ran.Load() != 120 || reported != 130 {
		t.Errorf("got %v after %d jobs, last report %d; want nil after 120, report 130", err, ran.Load(), reported)
	}
	jobs[7] = func() error { return errors.New("boom") }
	if err := runParallel(context.Background(), jobs, 4, nil, 0, 0); err == nil || err.Error() != "boom" {
		t.Errorf("with a failing job: %v, want boom", err)
	}
}

// A simulated node carries its pod capacity from its creation: a kubelet
// that admits its pods before it registers must not find a Node without
// room for them.
func TestSimulatedNodeHasPodCapacity(t *testing.T) {
	client := fake.NewClientset()
	if err := createNode(context.Background(), client, "n", 30*time.Second, map[string]string{RunLabel: "ns"}, 80); err != nil {
		t.Fatal(err)
	}
	node, err := client.CoreV1().Nodes().Get(context.Background(), "n", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for name, list := range map[string]corev1.ResourceList{"capacity": node.Status.Capacity, "allocatable": node.Status.Allocatable} {
		if got := list.Pods().Value(); got != 160 {
			t.Errorf("%s: %d pods, want 160 (twice the node's 80, above the kubelet's 110)", name, got)
		}
	}
}
