package podworkers

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/nodeagent-io/nodeagent/internal/testutil"
)

func pod(uid string, version int) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pod-" + uid, UID: types.UID(uid), ResourceVersion: strconv.Itoa(version)}}
}

// recorder records syncs and teardowns per pod, and catches overlap.
type recorder struct {
	mu         sync.Mutex
	running    map[types.UID]int
	overlaps   int
	syncs      map[types.UID][]string // resourceVersions synced, in order
	teardowns  map[types.UID]int
	syncErr    error
	syncDelay  time.Duration
	source     []*corev1.Pod
	syncCalled chan struct{}
}

func newRecorder() *recorder {
	return &recorder{running: map[types.UID]int{}, syncs: map[types.UID][]string{}, teardowns: map[types.UID]int{}, syncCalled: make(chan struct{}, 1000)}
}

func (r *recorder) enter(uid types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.running[uid]++
	if r.running[uid] > 1 {
		r.overlaps++
	}
}

func (r *recorder) leave(uid types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.running[uid]--
}

func (r *recorder) sync(_ context.Context, p *corev1.Pod) error {
	r.enter(p.UID)
	defer r.leave(p.UID)
	if r.syncDelay > 0 {
		time.Sleep(r.syncDelay)
	}
	r.mu.Lock()
	r.syncs[p.UID] = append(r.syncs[p.UID], p.ResourceVersion)
	err := r.syncErr
	r.mu.Unlock()
	r.syncCalled <- struct{}{}
	return err
}

func (r *recorder) teardown(_ context.Context, p *corev1.Pod) error {
	r.enter(p.UID)
	defer r.leave(p.UID)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.teardowns[p.UID]++
	return nil
}

func (r *recorder) listPods() []*corev1.Pod {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*corev1.Pod(nil), r.source...)
}

func (r *recorder) setSource(pods ...*corev1.Pod) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.source = pods
}

func queued(w *PodWorkers) int {
	w.queue.mu.Lock()
	defer w.queue.mu.Unlock()
	return len(w.queue.due)
}

func (r *recorder) syncCount(uid types.UID) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.syncs[uid])
}

func startWorkers(t testing.TB, r *recorder, clk *testingclock.FakeClock) *PodWorkers {
	t.Helper()
	return startWorkersWith(t, clk, Options{
		Sync: r.sync, Teardown: r.teardown, ListPods: r.listPods, SyncFrequency: time.Minute,
		Jitter: func(d time.Duration) time.Duration { return d }, // exact deadlines
	})
}

func startWorkersWith(t testing.TB, clk *testingclock.FakeClock, opts Options) *PodWorkers {
	t.Helper()
	opts.Clock = clk
	w := New(opts)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { w.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	testutil.WaitFor(t, "Run to start", func() bool { w.mu.Lock(); defer w.mu.Unlock(); return w.ctx != nil })
	return w
}

// Many goroutines flood UpdatePod for the same pods. No pod is ever synced
// by two goroutines at once, and the last version synced is the newest one
// delivered.
func TestStressNoOverlapNewestWins(t *testing.T) {
	r := newRecorder()
	r.syncDelay = 100 * time.Microsecond
	w := startWorkers(t, r, testingclock.NewFakeClock(time.Now()))
	const pods, senders, updatesPerSender = 20, 8, 200
	var version atomic.Int64
	var wg sync.WaitGroup
	for range senders {
		wg.Go(func() {
			for i := range updatesPerSender {
				uid := fmt.Sprint(i % pods)
				w.UpdatePod(pod(uid, int(version.Add(1))))
			}
		})
	}
	wg.Wait()
	// The newest update of each pod, delivered after every other.
	newest := map[types.UID]string{}
	for i := range pods {
		p := pod(fmt.Sprint(i), int(version.Add(1)))
		newest[p.UID] = p.ResourceVersion
		w.UpdatePod(p)
	}
	for uid, want := range newest {
		testutil.WaitFor(t, "the newest update of "+string(uid), func() bool {
			r.mu.Lock()
			defer r.mu.Unlock()
			s := r.syncs[uid]
			return len(s) > 0 && s[len(s)-1] == want
		})
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.overlaps != 0 {
		t.Errorf("a pod was synced by two goroutines at once %d times", r.overlaps)
	}
	total := 0
	for _, s := range r.syncs {
		total += len(s)
	}
	t.Logf("%d updates coalesced into %d syncs", senders*updatesPerSender+pods, total)
}

// firstSync starts workers on a fake clock, delivers pod "a" (version 1,
// also in the source) and waits until its first sync is done and requeued.
// It returns the clock that drives the sync loop.
func firstSync(t *testing.T, r *recorder) (*testingclock.FakeClock, *PodWorkers) {
	t.Helper()
	clk := testingclock.NewFakeClock(time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC))
	w := startWorkers(t, r, clk)
	p := pod("a", 1)
	r.setSource(p)
	w.UpdatePod(p)
	<-r.syncCalled
	testutil.WaitFor(t, "the requeue", func() bool { return queued(w) == 1 })
	return clk, w
}

// After its first successful sync a new pod syncs again at the next tick,
// as the kubelet's does when its PLEG sees the containers start; after that
// a pod is due strictly after S, and the 1 s tick delivers it with the
// newest version from the source.
func TestPeriodicResync(t *testing.T) {
	r := newRecorder()
	clk, w := firstSync(t, r)
	clk.Step(time.Second)
	<-r.syncCalled
	testutil.WaitFor(t, "the requeue after the second sync", func() bool { return queued(w) == 1 })

	for range 60 { // 60 ticks: now == deadline, not strictly past
		clk.Step(time.Second)
	}
	time.Sleep(20 * time.Millisecond)
	if n := r.syncCount("a"); n != 2 {
		t.Fatalf("synced %d times within S of the second sync, want 2", n)
	}
	r.setSource(pod("a", 2))
	clk.Step(time.Second)
	<-r.syncCalled
	r.mu.Lock()
	defer r.mu.Unlock()
	if got := fmt.Sprint(r.syncs["a"]); got != "[1 1 2]" {
		t.Errorf("synced versions: got %s, want [1 1 2]", got)
	}
}

func TestFailedSyncRetriesAfterTenSeconds(t *testing.T) {
	r := newRecorder()
	r.syncErr = errors.New("volume not ready")
	clk, _ := firstSync(t, r)
	for range 11 {
		clk.Step(time.Second)
	}
	<-r.syncCalled
	if n := r.syncCount("a"); n != 2 {
		t.Errorf("syncs after 11 s: %d, want 2", n)
	}
}

func TestTeardown(t *testing.T) {
	r := newRecorder()
	clk := testingclock.NewFakeClock(time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC))
	w := startWorkers(t, r, clk)

	t.Run("deleted pod: torn down once, later updates ignored", func(t *testing.T) {
		p := pod("deleted", 1)
		w.UpdatePod(p)
		<-r.syncCalled
		deleting := pod("deleted", 2)
		deleting.DeletionTimestamp = &metav1.Time{Time: clk.Now()}
		r.mu.Lock()
		r.source = append(r.source, deleting)
		r.mu.Unlock()
		w.UpdatePod(deleting)
		testutil.WaitFor(t, "the teardown", func() bool { return w.Workers() == 0 })
		w.UpdatePod(pod("deleted", 3))
		time.Sleep(10 * time.Millisecond)
		if n := r.syncCount("deleted"); n != 1 {
			t.Errorf("syncs: %d, want 1 (none after the teardown)", n)
		}
	})
	t.Run("finished pod", func(t *testing.T) {
		p := pod("done", 1)
		p.Status.Phase = corev1.PodSucceeded
		w.UpdatePod(p)
		testutil.WaitFor(t, "the teardown", func() bool { r.mu.Lock(); defer r.mu.Unlock(); return r.teardowns["done"] == 1 })
		if n := r.syncCount("done"); n != 0 {
			t.Errorf("a finished pod was synced %d times", n)
		}
	})
	t.Run("pod gone from the source: housekeeping tears it down", func(t *testing.T) {
		w.UpdatePod(pod("vanished", 1))
		<-r.syncCalled
		clk.Step(2 * time.Second)
		testutil.WaitFor(t, "the teardown", func() bool { r.mu.Lock(); defer r.mu.Unlock(); return r.teardowns["vanished"] == 1 })
		testutil.WaitFor(t, "the worker to exit", func() bool { return w.Workers() == 0 })
	})
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.overlaps != 0 {
		t.Errorf("overlapping work on one pod: %d", r.overlaps)
	}
}

// With S below 10 s a failed sync is retried after S, not 10 s, and the
// delay is jittered like any requeue.
func TestErrorBackoffIsAtMostS(t *testing.T) {
	for _, tt := range []struct {
		s, want time.Duration
	}{{time.Minute, 10 * time.Second}, {4 * time.Second, 4 * time.Second}} {
		t.Run(tt.s.String(), func(t *testing.T) {
			clk := testingclock.NewFakeClock(time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC))
			r := newRecorder()
			r.syncErr = errors.New("volume not ready")
			var mu sync.Mutex
			var jittered []time.Duration
			w := startWorkersWith(t, clk, Options{
				Sync: r.sync, Teardown: r.teardown, ListPods: r.listPods, SyncFrequency: tt.s,
				Jitter: func(d time.Duration) time.Duration {
					mu.Lock()
					defer mu.Unlock()
					jittered = append(jittered, d)
					return d
				},
			})
			p := pod("a", 1)
			r.setSource(p)
			w.UpdatePod(p)
			<-r.syncCalled
			testutil.WaitFor(t, "the requeue", func() bool { return queued(w) == 1 })
			mu.Lock()
			got := fmt.Sprint(jittered)
			mu.Unlock()
			if got != fmt.Sprint([]time.Duration{tt.want}) {
				t.Errorf("delays handed to the jitter: %s, want [%s]", got, tt.want)
			}
			for range int(tt.want / time.Second) { // at the deadline: not yet
				clk.Step(time.Second)
			}
			time.Sleep(20 * time.Millisecond)
			if n := r.syncCount("a"); n != 1 {
				t.Fatalf("retried before %s", tt.want)
			}
			clk.Step(time.Second)
			<-r.syncCalled
		})
	}
}

// A pod that starts terminating while its sync waits (for a volume that
// cannot mount) has that sync cancelled, and is torn down at once.
func TestTerminationCancelsTheSyncInFlight(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC))
	r := newRecorder()
	waiting := make(chan struct{})
	var syncErr error
	w := startWorkersWith(t, clk, Options{
		Sync: func(ctx context.Context, p *corev1.Pod) error {
			close(waiting)
			<-ctx.Done() // a mount wait of up to 2 m 3 s, cut short
			syncErr = ctx.Err()
			return syncErr
		},
		Teardown: r.teardown, ListPods: r.listPods, SyncFrequency: time.Minute,
	})
	p := pod("a", 1)
	r.setSource(p)
	w.UpdatePod(p)
	<-waiting
	deleting := pod("a", 2)
	deleting.DeletionTimestamp = &metav1.Time{Time: clk.Now()}
	w.UpdatePod(deleting)
	testutil.WaitFor(t, "the teardown", func() bool { r.mu.Lock(); defer r.mu.Unlock(); return r.teardowns["a"] == 1 })
	if !errors.Is(syncErr, context.Canceled) {
		t.Errorf("the sync in flight ended with %v, want context.Canceled", syncErr)
	}
}
