// Package reconciler brings the volumes on disk (the actual state) to what
// the sources want (the desired state), as the kubelet's reconciler does
// (docs/kubelet-behaviour.md, "Volume manager"):
//
//   - it unmounts volumes no source wants, mounts those not on disk and
//     remounts those flagged remountRequired; a desired volume marked
//     "keep" (found on disk, its pod not synced yet) is left alone;
//   - each operation runs in its own goroutine, one at a time per volume,
//     through an Executor that does the disk work; a failed one is retried
//     with per-volume exponential backoff (500 ms doubling to 2 m 2 s), and
//     a success forgets it (operations.go); an operation that panics
//     fails with a PanicError, logged with its stack and retried like any
//     failure, and the process and the other volumes go on (start.go);
//   - it looks only at the volumes handed to it (HandOver, ObjectChanged,
//     an operation that ended) and at those still waiting for a retry, so a
//     pass over a node where nothing changed costs a lock and a clock read.
//
// Run passes on a 100 ms grid (pacedloop), only at the points where work
// is due, and once more, off the grid, as soon as ObjectChanged asks:
// at most once per half period (WakeHalfPeriod, the agent's), or at every
// change (WakeAtOnce, the CSI driver's). It never learns which source wants a
// volume: it reads only the desired state.
package reconciler

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/nodeagent-io/nodeagent/pkg/podrefs"
	"github.com/nodeagent-io/nodeagent/pkg/volumemanager/atomicwriter"
	"github.com/nodeagent-io/nodeagent/pkg/volumemanager/cache"
	"github.com/nodeagent-io/nodeagent/pkg/volumemanager/pacedloop"
)

// OperationKind is what the reconciler does to a volume.
type OperationKind string

const (
	Mount   OperationKind = "mount"
	Remount OperationKind = "remount"
	Unmount OperationKind = "unmount"
)

// Operation is one operation, as the Executor gets it.
type Operation struct {
	Kind OperationKind
	Key  cache.VolumeKey
	// Request is what a mount or remount writes from; nil when
	// unmounting a volume found on disk.
	Request *cache.Request
	Spec    podrefs.KeptVolume
	Dir     string
	// Layout is how a mount or remount writes the files.
	Layout cache.Layout
	// LastHash and LastStamp are what a remounted volume holds.
	LastHash  string
	LastStamp atomicwriter.Stamp
}

// Result is what a successful set-up left on disk.
type Result struct {
	ResourceVersion string
	ContentHash     string
	Stamp           atomicwriter.Stamp
	// Wrote: a new generation was written, not just found in place.
	Wrote bool
}

// Executor does the disk work of operations.
type Executor interface {
	SetUp(ctx context.Context, logger klog.Logger, op Operation) (Result, error)
	TearDown(ctx context.Context, op Operation) error
}

// EventRecorder emits Kubernetes events (client-go's record.EventRecorder).
type EventRecorder interface {
	Eventf(object runtime.Object, eventtype, reason, messageFmt string, args ...interface{})
}

// Recorder receives the reconciler's measurements.
type Recorder interface {
	// OperationDone records one mount, remount or unmount.
	OperationDone(kind OperationKind, err error, duration time.Duration)
	// VolumesMounted reports how many volumes are on disk.
	VolumesMounted(n int)
	// VolumeWritten counts a mount or remount that wrote a new generation
	// to disk (most remounts find the content unchanged and write nothing).
	VolumeWritten()
	// ChangeRead records how long a volume took to read a change of an
	// object it reads (changes.go).
	ChangeRead(delay time.Duration)
}

// desiredVolumes is what the reconciler reads of the desired state.
type desiredVolumes interface {
	Get(key cache.VolumeKey) (cache.DesiredVolume, bool)
}

// Wake is when a change that ObjectChanged reports is written.
type Wake int

const (
	// WakeHalfPeriod: a pass at once, then none woken for half a period;
	// changes meanwhile wait for the end of that half period. The agent's:
	// it keeps the kubelet's timing, and an update storm costs a volume
	// at most thirty remounts a second (twenty woken, ten on the grid).
	WakeHalfPeriod Wake = iota
	// WakeAtOnce: a pass at every change, as soon as the one before has
	// ended. The CSI driver's: it owes the kubelet's grid nothing, and a
	// storm is bounded by the operations themselves, one per volume at a
	// time, the changes during one read again when it ends.
	WakeAtOnce
)

func (w Wake) String() string {
	if w == WakeAtOnce {
		return "atOnce"
	}
	return "halfPeriod"
}

// Options configure New.
type Options struct {
	Desired  desiredVolumes
	Actual   *cache.ActualState
	Executor Executor
	// Events and Recorder are optional.
	Events   EventRecorder
	Recorder Recorder
	// Clock drives backoff and the loop; nil means the real clock.
	Clock clock.WithTicker
	// Period is the loop's; default 100 ms. Origin is where its grid
	// starts (the volume manager puts it half a period after the
	// populator's).
	Period time.Duration
	Origin time.Time
	// Wake is when a pass follows ObjectChanged.
	Wake Wake
}

// Reconciler is the volume manager's reconciler.
type Reconciler struct {
	opts  Options
	clock clock.WithTicker
	loop  *pacedloop.Loop

	// mu guards pending and ops. Held, it is taken before the desired and
	// the actual state's locks, never after.
	mu sync.Mutex
	// pending are the volumes to look at on the next pass.
	pending sets.Set[cache.VolumeKey]
	// ops holds a record for each volume with an operation in flight or
	// a last operation that failed (operations.go).
	ops     map[cache.VolumeKey]*volumeOp
	running sync.WaitGroup // the operations' goroutines
	// changeSeen asks for a pass off the grid (ObjectChanged). Buffer
	// of one: changes that come while a pass is due coalesce into it.
	changeSeen chan struct{}
	// unread holds, by volume, when the oldest change it has not read yet
	// was seen (changes.go).
	unread map[cache.VolumeKey]time.Time
}

// New returns a reconciler; call Run to start its loop.
func New(opts Options) *Reconciler {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Period <= 0 {
		opts.Period = 100 * time.Millisecond
	}
	if opts.Recorder == nil {
		opts.Recorder = nopRecorder{}
	}
	return &Reconciler{
		opts:       opts,
		clock:      opts.Clock,
		loop:       pacedloop.New(opts.Clock, opts.Origin, opts.Period),
		pending:    sets.New[cache.VolumeKey](),
		ops:        map[cache.VolumeKey]*volumeOp{},
		unread:     map[cache.VolumeKey]time.Time{},
		changeSeen: make(chan struct{}, 1),
	}
}

// Run passes on the grid where work is due, and off it when
// ObjectChanged asks, until ctx ends; then it waits for the operations
// in flight.
func (r *Reconciler) Run(ctx context.Context) {
	var loops sync.WaitGroup
	loops.Go(func() { r.loop.Run(ctx, r.Pass) })
	loops.Go(func() {
		// A pass as soon as ObjectChanged asks; with WakeHalfPeriod,
		// at least half a period before the next woken one. The changes
		// in between coalesce in changeSeen.
		for {
			select {
			case <-ctx.Done():
				return
			case <-r.changeSeen:
				r.Pass(ctx)
			}
			if r.opts.Wake == WakeAtOnce {
				continue
			}
			if !r.loop.SleepUntil(ctx, r.clock.Now().Add(r.opts.Period/2)) {
				return
			}
		}
	})
	loops.Wait()
	r.Wait()
}

// Wait waits for the operations in flight.
func (r *Reconciler) Wait() { r.running.Wait() }

// HandOver makes keys pending: the next pass looks at them. Whoever
// changes what a volume should be or is calls it after the change.
func (r *Reconciler) HandOver(keys ...cache.VolumeKey) {
	if len(keys) == 0 {
		return
	}
	r.mu.Lock()
	r.pending.Insert(keys...)
	r.mu.Unlock()
	r.loop.Kick()
}

// handOverLocked is HandOver with r.mu held.
func (r *Reconciler) handOverLocked(key cache.VolumeKey) {
	r.pending.Insert(key)
	r.loop.Kick()
}

// ObjectChanged makes each of keys, volumes that read a ConfigMap or Secret that
// changed, read it again: one on disk is flagged for a remount, one with
// an operation in flight is read again once it ends, and a failing one is
// retried at once instead of after its backoff. It asks for a pass off the
// grid.
func (r *Reconciler) ObjectChanged(keys []cache.VolumeKey) {
	if len(keys) == 0 {
		return
	}
	r.mu.Lock()
	idle := keys[:0:0]
	now := r.clock.Now()
	for _, key := range keys {
		r.changeSeenLocked(key, now)
		o, recorded := r.ops[key]
		if recorded && o.inFlight {
			o.changedMeanwhile = true
			continue
		}
		idle = append(idle, key)
		if recorded {
			o.retryDelay = 0
		}
		r.handOverLocked(key)
	}
	r.opts.Actual.MarkRemountRequired(idle...)
	r.mu.Unlock()
	select {
	case r.changeSeen <- struct{}{}:
	default: // a pass is due already
	}
}

// Backlog is the number of volumes the next pass looks at.
func (r *Reconciler) Backlog() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.pending)
}

// Pass is one pass of the reconciler: it starts the operations that bring
// the actual state towards the desired state, and never waits for one. It
// looks only at the pending volumes, and returns when the earliest retry
// among those left waiting comes due, or the zero time if none waits for a
// time. Run calls it on the grid; tests call it directly.
func (r *Reconciler) Pass(ctx context.Context) (retryAt time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.clock.Now()
	for key := range r.pending {
		if r.reconcileVolume(ctx, key, now) {
			delete(r.pending, key)
			continue
		}
		if o, ok := r.ops[key]; ok && o.waiting(now) {
			if at := o.retryAt(); retryAt.IsZero() || at.Before(retryAt) {
				retryAt = at
			}
		}
	}
	return retryAt
}

// reconcileVolume starts what one volume needs, if anything, and says
// whether it is settled: false keeps it pending for the next pass. Called
// with r.mu held.
func (r *Reconciler) reconcileVolume(ctx context.Context, key cache.VolumeKey, now time.Time) (settled bool) {
	o, recorded := r.ops[key]
	if recorded && o.inFlight {
		return true // finish hands it back
	}
	want, wanted := r.opts.Desired.Get(key)
	// Read once: with no operation in flight (r.mu held) nothing but a
	// remount flag changes it meanwhile.
	v, mounted := r.opts.Actual.Get(key)
	switch {
	case !wanted && !mounted:
		// Gone, or never mounted: a failure is no longer news.
		delete(r.ops, key)
		return true
	case wanted && want.Keep():
		return true // handed over again when its source decides
	case recorded && o.waiting(now):
		return false // retried once its backoff has passed
	case !wanted:
		r.start(ctx, Operation{Kind: Unmount, Key: key, Request: v.Request, Spec: v.Spec, Dir: v.Dir})
	case !mounted:
		r.start(ctx, Operation{Kind: Mount, Key: key, Request: want.Request, Spec: want.Spec, Dir: want.Dir, Layout: want.Layout})
	case v.RemountRequired && r.opts.Actual.TakeRemount(key):
		r.start(ctx, Operation{Kind: Remount, Key: key, Request: want.Request, Spec: want.Spec, Dir: v.Dir, Layout: want.Layout, LastHash: v.ContentHash, LastStamp: v.Stamp})
	}
	return true
}

// settled says whether a volume with no operation in flight needs nothing
// from the reconciler: on disk, wanted and not flagged for a remount, or
// neither on disk nor wanted, and not failing. Called with r.mu held.
func (r *Reconciler) settled(key cache.VolumeKey) bool {
	if o, ok := r.ops[key]; ok && (o.inFlight || o.err != nil) {
		return false
	}
	want, wanted := r.opts.Desired.Get(key)
	if wanted && want.Keep() {
		return true
	}
	v, mounted := r.opts.Actual.Get(key)
	return mounted == wanted && !(mounted && v.RemountRequired)
}

type nopRecorder struct{}

func (nopRecorder) OperationDone(OperationKind, error, time.Duration) {}
func (nopRecorder) VolumesMounted(int)                                {}
func (nopRecorder) VolumeWritten()                                    {}
func (nopRecorder) ChangeRead(time.Duration)                          {}
