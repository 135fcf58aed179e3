package volumemanager

import (
	"context"
	"fmt"
	"testing"
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
	for i := range benchPods {
		pod := newPod(fmt.Sprintf("uid-%04d", i), volumeSpec{name: "config", configMap: fmt.Sprintf("cm-%02d", i%50)})
		h.mark(pod)
	}
	h.step()
	if n := len(h.m.Volumes()); n != benchPods {
		b.Fatalf("%d volumes mounted, want %d", n, benchPods)
	}
	return h
}

func BenchmarkPopulatorPass(b *testing.B) {
	b.Run("1000-pods-steady", func(b *testing.B) {
		h := mountedNode(b)
		for b.Loop() {
			h.m.populate()
		}
	})
	b.Run("1000-pods-all-marked", func(b *testing.B) {
		h := mountedNode(b)
		for b.Loop() {
			h.m.mu.Lock()
			for _, dp := range h.m.desired {
				h.m.markPod(dp)
			}
			h.m.mu.Unlock()
			h.m.populate()
		}
	})
}

func BenchmarkReconcilerPass(b *testing.B) {
	b.Run("1000-pods-steady", func(b *testing.B) {
		h := mountedNode(b)
		ctx := context.Background()
		for b.Loop() {
			h.m.reconcile(ctx)
		}
		h.m.running.Wait()
		if n := len(h.m.ops); n != 0 {
			b.Fatalf("the steady pass started %d operations", n)
		}
	})
}
