package podworkers

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	testingclock "k8s.io/utils/clock/testing"
)

// The pod workers' hot paths on a node with 1,000 pods, for `make bench`:
// one update handed to its pod's worker until the worker's sync runs, and
// the 1 s sync tick, with no pod due (most ticks) and with every pod due at
// once. The syncs themselves do nothing here: their cost is the volume
// manager's and the cache's, benchmarked in their packages.

// busyNode starts pod workers for 1,000 pods whose syncs signal done, and
// waits for every first sync and its follow-up.
func busyNode(b *testing.B) (*PodWorkers, []*corev1.Pod, chan struct{}) {
	synced := make(chan struct{}, 2*benchPods)
	clk := testingclock.NewFakeClock(time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC))
	pods := make([]*corev1.Pod, benchPods)
	for i := range pods {
		pods[i] = pod(fmt.Sprintf("uid-%04d", i), 1)
	}
	w := startWorkersWith(b, clk, Options{
		Sync:          func(context.Context, *corev1.Pod) error { synced <- struct{}{}; return nil },
		Teardown:      func(context.Context, *corev1.Pod) error { return nil },
		ListPods:      func() []*corev1.Pod { return pods },
		SyncFrequency: time.Minute,
		Jitter:        func(d time.Duration) time.Duration { return d },
	})
	for _, p := range pods {
		w.UpdatePod(p)
	}
	drainAndRequeue(w, synced)
	clk.Step(time.Millisecond)
	w.syncDuePods() // the follow-up sync of every new pod
	drainAndRequeue(w, synced)
	return w, pods, synced
}

const benchPods = 1000

// drainAndRequeue waits for a sync of every pod, and for every worker to
// have queued its pod's next sync after it.
func drainAndRequeue(w *PodWorkers, synced chan struct{}) {
	for range benchPods {
		<-synced
	}
	for queued(w) < benchPods {
		time.Sleep(10 * time.Microsecond)
	}
}

func BenchmarkDispatch(b *testing.B) {
	w, pods, synced := busyNode(b)
	for i := 0; b.Loop(); i++ {
		w.UpdatePod(pods[i%benchPods])
		<-synced
	}
}

func BenchmarkSyncTick(b *testing.B) {
	b.Run("1000-pods-none-due", func(b *testing.B) {
		w, _, _ := busyNode(b)
		for b.Loop() {
			w.syncDuePods()
		}
	})
	b.Run("1000-pods-all-due", func(b *testing.B) {
		w, pods, synced := busyNode(b)
		for b.Loop() {
			for _, p := range pods {
				w.queue.Enqueue(p.UID, -time.Millisecond)
			}
			w.syncDuePods()
			drainAndRequeue(w, synced)
		}
	})
}
