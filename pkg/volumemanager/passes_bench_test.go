package volumemanager

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// The volume manager's two 100 ms passes on a node with 1,000 pods, for
// `make bench`: what each tick costs in steady state (nothing to do), and
// the populator's pass when every pod's sync has marked it at once (the
// agent's start, or a sync tick after a long stall).

const benchPods = 1000

// mountedNode returns a harness whose 1,000 pods each mount one of 50
// shared ConfigMaps, all on disk.
func mountedNode(b *testing.B) *harness {
	h := newHarness(b)
	for i := range 50 {
		h.cms.set(fmt.Sprintf("cm-%02d", i), map[string]string{"config.yaml": "a: 1\n"})
	}
	for _, pod := range podsOf() {
		h.mark(pod)
	}
	h.step()
	if n := len(h.m.Volumes()); n != benchPods {
		b.Fatalf("%d volumes mounted, want %d", n, benchPods)
	}
	return h
}

// podsOf returns the pods of mountedNode.
func podsOf() []*corev1.Pod {
	var pods []*corev1.Pod
	for i := range benchPods {
		pods = append(pods, newPod(fmt.Sprintf("uid-%04d", i), volumeSpec{name: "config", configMap: fmt.Sprintf("cm-%02d", i%50)}))
	}
	return pods
}

func BenchmarkPopulatorPass(b *testing.B) {
	b.Run("1000-pods-steady", func(b *testing.B) {
		h := mountedNode(b)
		for b.Loop() {
			h.m.populator.Pass()
		}
	})
	b.Run("1000-pods-all-marked", func(b *testing.B) {
		h := mountedNode(b)
		pods := podsOf()
		for b.Loop() {
			for _, pod := range pods {
				h.m.populator.MarkPod(pod)
			}
			h.m.populator.Pass()
		}
	})
}

func BenchmarkReconcilerPass(b *testing.B) {
	b.Run("1000-pods-steady", func(b *testing.B) {
		h := mountedNode(b)
		ctx := context.Background()
		for b.Loop() {
			h.m.core.Reconciler().Pass(ctx)
		}
		h.m.core.Reconciler().Wait()
		if n := h.writes.operations.Load(); n != benchPods {
			b.Fatalf("the steady pass started %d operations", n-benchPods)
		}
	})
}
