// Package podworkers runs the node agent's pod syncs the way the kubelet
// schedules them (docs/kubelet-behaviour.md, "Pod syncs").
//
// Guarantees:
//   - One goroutine per pod UID runs every sync and the teardown of that
//     pod, so a pod is never synced by two goroutines at once.
//   - Updates coalesce: UpdatePod stores the newest update as pending and
//     wakes the worker through a channel with a buffer of one; an update not
//     yet delivered is replaced by a newer one. After the worker finishes a
//     sync it always looks at the pending slot again, so the newest update
//     is the last one synced.
//   - After a sync the pod is due again after S + U[0, 0.5)·S on success
//     (S is the sync frequency), or after min(10 s, S) with the same jitter
//     on error. After its first successful sync a pod is due at once, as
//     the kubelet syncs a new pod again when its PLEG sees the containers
//     start. A 1 s tick hands
//     every pod whose deadline has passed to its worker with the newest
//     version of the pod. Updates from the informer are delivered at once.
//   - Each worker is syncing, terminating or terminated, and only moves
//     forward. A pod that is deleted (deletion timestamp, or gone from the
//     source) or finished (phase Succeeded or Failed) becomes terminating: a
//     sync of it in flight is cancelled, so that a volume that cannot mount
//     does not hold the teardown back, and it is torn down instead of
//     synced, until a teardown succeeds. Then it is terminated: its worker
//     exits, and later updates for the UID are ignored until the pod leaves
//     the source.
//   - Housekeeping every 2 s tears down pods whose worker outlived them in
//     the source, forgets terminated UIDs, and runs the caller's own
//     housekeeping (removing orphaned directories).
package podworkers

import (
	"context"
	"sync"
	"time"

	"github.com/nodeagent-io/nodeagent/pkg/podrefs"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// Kind is a kind of work a pod worker does, for metrics.
type Kind string

const (
	KindSync     Kind = "sync"
	KindTeardown Kind = "teardown"
)

// Recorder receives measurements; declared here so that this package does
// not depend on Prometheus.
type Recorder interface {
	WorkDone(kind Kind, err error, duration time.Duration)
}

// Options configure New.
type Options struct {
	// Sync is the kubelet's syncPod for one pod.
	Sync func(ctx context.Context, pod *corev1.Pod) error
	// Teardown unmounts a deleted or finished pod's volumes and drops its
	// references; the worker exits once it succeeds.
	Teardown func(ctx context.Context, pod *corev1.Pod) error
	// ListPods returns the pods bound to this node, newest versions, from
	// the informer's cache.
	ListPods func() []*corev1.Pod
	// Housekeeping, optional, runs every 2 s after the workers' own.
	Housekeeping func(ctx context.Context)
	// SyncFrequency is S; default 1 minute.
	SyncFrequency time.Duration
	// ErrorBackoff is the requeue delay after a failed sync; default
	// min(10 s, SyncFrequency), as in the kubelet.
	ErrorBackoff time.Duration
	// Clock drives the ticks and deadlines; nil means the real clock.
	Clock clock.WithTicker
	// Jitter adds to a delay; default wait.Jitter(d, 0.5).
	Jitter   func(time.Duration) time.Duration
	Recorder Recorder
}

// PodWorkers owns the per-pod goroutines.
type PodWorkers struct {
	opts  Options
	queue *workQueue

	mu       sync.Mutex
	ctx      context.Context // set by Run; nil before
	workers  map[types.UID]*worker
	early    []earlyUpdate // delivered before Run; Run replays them
	wg       sync.WaitGroup
	lastTick time.Time
}

// state is where a pod is in its worker's hands, as the kubelet names it.
// It only moves forward.
type state int

const (
	// syncing: the pod runs, and its worker syncs it.
	syncing state = iota
	// terminating: the pod is deleted or finished; its worker tears it
	// down, retrying until that succeeds, and never syncs it again.
	terminating
	// terminated: torn down; the goroutine has exited, and updates for
	// the UID are ignored until the pod leaves the source.
	terminated
)

type worker struct {
	state   state
	wake    chan struct{} // buffer of one
	pending *corev1.Pod   // newest undelivered version; nil when none
	lastPod *corev1.Pod   // newest version seen, for a teardown after it left the source
	// cancelSync cancels the sync in flight; nil when none runs.
	cancelSync context.CancelFunc
	// synced says a sync of the pod has succeeded.
	synced bool
}

type earlyUpdate struct {
	pod      *corev1.Pod
	teardown bool
}

// New returns PodWorkers. Updates delivered before Run are held and
// replayed when Run starts.
func New(opts Options) *PodWorkers {
	if opts.SyncFrequency <= 0 {
		opts.SyncFrequency = time.Minute
	}
	if opts.ErrorBackoff <= 0 {
		opts.ErrorBackoff = min(10*time.Second, opts.SyncFrequency)
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Jitter == nil {
		opts.Jitter = func(d time.Duration) time.Duration { return wait.Jitter(d, 0.5) }
	}
	if opts.Recorder == nil {
		opts.Recorder = nopRecorder{}
	}
	return &PodWorkers{opts: opts, queue: newWorkQueue(opts.Clock), workers: map[types.UID]*worker{}}
}

// ShouldTearDown reports whether a pod's volumes should go: it is being
// deleted, or it has finished (podrefs.Leaving, the one reading of it).
func ShouldTearDown(pod *corev1.Pod) bool {
	return podrefs.Leaving(pod)
}

// UpdatePod delivers the newest version of a pod to its worker, starting
// the worker if needed. A pod that should be torn down is torn down.
func (p *PodWorkers) UpdatePod(pod *corev1.Pod) {
	p.deliver(pod, ShouldTearDown(pod))
}

// DeletePod tears a pod down, for a pod that left the source.
func (p *PodWorkers) DeletePod(pod *corev1.Pod) {
	p.deliver(pod, true)
}

func (p *PodWorkers) deliver(pod *corev1.Pod, teardown bool) {
	p.mu.Lock()
	if p.ctx == nil {
		p.early = append(p.early, earlyUpdate{pod: pod, teardown: teardown})
		p.mu.Unlock()
		return
	}
	if p.ctx.Err() != nil {
		p.mu.Unlock()
		return
	}
	w, ok := p.workers[pod.UID]
	if !ok {
		w = &worker{wake: make(chan struct{}, 1)}
		p.workers[pod.UID] = w
		p.wg.Add(1)
		go p.run(pod.UID, w)
	}
	if w.state == terminated {
		p.mu.Unlock()
		return
	}
	if teardown && w.state == syncing {
		w.state = terminating
		if w.cancelSync != nil {
			w.cancelSync() // the teardown comes next; the sync's wait is moot
		}
	}
	w.pending, w.lastPod = pod, pod
	p.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default: // already woken; it will find the newest pending update
	}
}

// run is one pod's worker goroutine: it syncs the newest version of the pod
// each time it is woken, until the pod is torn down.
func (p *PodWorkers) run(uid types.UID, w *worker) {
	defer p.wg.Done()
	ctx := p.ctx
	logger := klog.FromContext(ctx).WithValues("podUID", uid)
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.wake:
		}
		p.mu.Lock()
		pod, st := w.pending, w.state
		w.pending = nil
		p.mu.Unlock()
		if pod == nil {
			continue
		}
		podCtx := klog.NewContext(ctx, logger.WithValues("pod", klog.KObj(pod)))
		if st == terminating {
			if p.tearDown(podCtx, uid, w, pod) {
				return
			}
			continue
		}
		p.sync(podCtx, uid, w, pod)
	}
}

// sync runs one sync, cancellable by the pod's termination, and queues the
// next one.
func (p *PodWorkers) sync(ctx context.Context, uid types.UID, w *worker, pod *corev1.Pod) {
	start := p.opts.Clock.Now()
	syncCtx, cancel := context.WithCancel(ctx)
	p.mu.Lock()
	w.cancelSync = cancel
	p.mu.Unlock()
	err := p.opts.Sync(syncCtx, pod)
	p.mu.Lock()
	w.cancelSync = nil
	p.mu.Unlock()
	cancel()
	p.opts.Recorder.WorkDone(KindSync, err, p.opts.Clock.Since(start))
	switch {
	case err != nil:
		klog.FromContext(ctx).Error(err, "Syncing pod failed; will retry")
		p.queue.Enqueue(uid, p.opts.Jitter(p.opts.ErrorBackoff))
	case !w.synced:
		// The kubelet syncs a new pod again about a second after its first
		// sync, when its PLEG relist sees the containers started; the
		// relist runs just after the sync tick. From then on the pod's
		// syncs stay on the same ticks as the other pods that started
		// with it, and they share their ConfigMaps' GETs as the
		// kubelet's do. Due at once: the next tick hands it over.
		w.synced = true
		p.queue.Enqueue(uid, 0)
	default:
		p.queue.Enqueue(uid, p.opts.Jitter(p.opts.SyncFrequency))
	}
}

// tearDown runs one teardown and reports whether it succeeded; a failed one
// is retried after the error backoff.
func (p *PodWorkers) tearDown(ctx context.Context, uid types.UID, w *worker, pod *corev1.Pod) bool {
	logger := klog.FromContext(ctx)
	start := p.opts.Clock.Now()
	err := p.opts.Teardown(ctx, pod)
	p.opts.Recorder.WorkDone(KindTeardown, err, p.opts.Clock.Since(start))
	if err != nil {
		logger.Error(err, "Tearing down pod failed; will retry")
		p.queue.Enqueue(uid, p.opts.Jitter(p.opts.ErrorBackoff))
		return false
	}
	p.mu.Lock()
	w.state = terminated
	p.mu.Unlock()
	p.queue.Forget(uid)
	logger.V(2).Info("Pod torn down")
	return true
}

// Run runs the 1 s sync loop and the 2 s housekeeping until ctx ends, then
// waits for the workers to return.
func (p *PodWorkers) Run(ctx context.Context) {
	p.mu.Lock()
	p.ctx = ctx
	early := p.early
	p.early = nil
	p.mu.Unlock()
	for _, u := range early {
		p.deliver(u.pod, u.teardown)
	}
	syncTicker := p.opts.Clock.NewTicker(time.Second)
	defer syncTicker.Stop()
	housekeepingTicker := p.opts.Clock.NewTicker(2 * time.Second)
	defer housekeepingTicker.Stop()
	for {
		select {
		case <-ctx.Done():
			p.wg.Wait()
			return
		case <-syncTicker.C():
			p.syncDuePods()
		case <-housekeepingTicker.C():
			p.housekeeping(ctx)
		}
	}
}

// LastTick is when the sync loop last ran, for the health check.
func (p *PodWorkers) LastTick() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lastTick
}

// syncDuePods hands every pod whose deadline has passed to its worker.
func (p *PodWorkers) syncDuePods() {
	p.mu.Lock()
	p.lastTick = p.opts.Clock.Now()
	p.mu.Unlock()
	due := p.queue.GetWork()
	if len(due) == 0 {
		return
	}
	current := p.podsByUID()
	for _, uid := range due {
		if pod, ok := current[uid]; ok {
			p.UpdatePod(pod)
			continue
		}
		// Gone from the source (a teardown that failed): retry it.
		p.mu.Lock()
		w := p.workers[uid]
		p.mu.Unlock()
		if w != nil {
			p.DeletePod(w.lastPod)
		}
	}
}

// housekeeping tears down pods whose worker outlived them in the source,
// and forgets terminated pods that left it.
func (p *PodWorkers) housekeeping(ctx context.Context) {
	current := p.podsByUID()
	var orphans []*corev1.Pod
	p.mu.Lock()
	for uid, w := range p.workers {
		if _, ok := current[uid]; ok {
			continue
		}
		switch w.state {
		case syncing:
			orphans = append(orphans, w.lastPod)
		case terminated:
			delete(p.workers, uid)
		}
	}
	p.mu.Unlock()
	for _, pod := range orphans {
		p.DeletePod(pod)
	}
	if p.opts.Housekeeping != nil {
		p.opts.Housekeeping(ctx)
	}
}

func (p *PodWorkers) podsByUID() map[types.UID]*corev1.Pod {
	pods := p.opts.ListPods()
	byUID := make(map[types.UID]*corev1.Pod, len(pods))
	for _, pod := range pods {
		byUID[pod.UID] = pod
	}
	return byUID
}

// Workers returns how many pod workers are running.
func (p *PodWorkers) Workers() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, w := range p.workers {
		if w.state != terminated {
			n++
		}
	}
	return n
}

type nopRecorder struct{}

func (nopRecorder) WorkDone(Kind, error, time.Duration) {}
