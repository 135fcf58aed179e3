package reconciler

import (
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/nodeagent-io/nodeagent/pkg/volumemanager/cache"
)

// The reconciler retries a failed operation after a delay per volume that
// starts at initialRetryDelay and doubles up to maxRetryDelay, as the
// kubelet's volume operations do; a success forgets it.
const (
	initialRetryDelay = 500 * time.Millisecond
	maxRetryDelay     = 2*time.Minute + 2*time.Second
)

// volumeOp is the reconciler's record of one volume's operations, as the
// kubelet's nestedpendingoperations keeps one per operation: whether one is
// in flight, whether a ConfigMap it reads changed meanwhile, and the last
// failure with its retry delay. A volume whose last operation succeeded
// and that has none in flight has no record, so the steady pass finds
// nothing to look at.
type volumeOp struct {
	// inFlight: an operation runs; only one runs per volume at a time.
	// startedAt is when the last one started.
	inFlight  bool
	startedAt time.Time
	// changedMeanwhile: a ConfigMap the volume reads changed while the
	// operation ran, perhaps after its read; the volume is read again
	// when it ends, whatever the outcome.
	changedMeanwhile bool
	// err is the last failed operation's error, as the executor returned
	// it (its type tells the cause); failedAt when it ended, failedStarted
	// when it started.
	err                     error
	failedAt, failedStarted time.Time
	// retryDelay is how long after failedAt the next try waits; 0 means
	// at once (never failed, or the wait was cancelled).
	retryDelay time.Duration
}

// op returns key's record, making one. Called with r.mu held.
func (r *Reconciler) op(key cache.VolumeKey) *volumeOp {
	o, ok := r.ops[key]
	if !ok {
		o = &volumeOp{}
		r.ops[key] = o
	}
	return o
}

// failed records a failed operation ending at now. The retry delay doubles
// from the last one, or starts again at initialRetryDelay when there was
// none or the last failure is long past (twice the longest delay).
// retryAtOnce skips the wait: something the volume reads changed.
func (o *volumeOp) failed(err error, now time.Time, retryAtOnce bool) {
	switch {
	case retryAtOnce:
		o.retryDelay = 0
	case o.retryDelay == 0 || now.Sub(o.failedAt) > 2*maxRetryDelay:
		o.retryDelay = initialRetryDelay
	default:
		o.retryDelay = min(2*o.retryDelay, maxRetryDelay)
	}
	o.err, o.failedAt, o.failedStarted = err, now, o.startedAt
}

// waiting says whether a failed volume still waits for its retry at now.
func (o *volumeOp) waiting(now time.Time) bool {
	return o.retryDelay > 0 && now.Sub(o.failedAt) < o.retryDelay
}

// retryAt is when a failed volume's retry comes due.
func (o *volumeOp) retryAt() time.Time { return o.failedAt.Add(o.retryDelay) }

// Failure is a volume's last failed operation, as Failure reports it.
type Failure struct {
	// Err is the operation's error as the executor returned it: callers
	// tell its cause by errors.Is and errors.As, not by its text.
	Err error
	// Started and At are when the failed operation started and ended.
	Started, At time.Time
	// RetryAt is when the reconciler tries again, unless something the
	// volume reads changes first.
	RetryAt time.Time
}

// Failure returns key's last failure, if its last operation failed.
func (r *Reconciler) Failure(key cache.VolumeKey) (Failure, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	o, ok := r.ops[key]
	if !ok || o.err == nil {
		return Failure{}, false
	}
	return Failure{Err: o.err, Started: o.failedStarted, At: o.failedAt, RetryAt: o.retryAt()}, true
}

// Failures returns every volume whose last operation failed.
func (r *Reconciler) Failures() map[cache.VolumeKey]Failure {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[cache.VolumeKey]Failure{}
	for key, o := range r.ops {
		if o.err != nil {
			out[key] = Failure{Err: o.err, Started: o.failedStarted, At: o.failedAt, RetryAt: o.retryAt()}
		}
	}
	return out
}

// InFlight says whether an operation on key runs now.
func (r *Reconciler) InFlight(key cache.VolumeKey) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	o, ok := r.ops[key]
	return ok && o.inFlight
}

// Busy returns the pods with an operation in flight.
func (r *Reconciler) Busy() sets.Set[types.UID] {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := sets.New[types.UID]()
	for key, o := range r.ops {
		if o.inFlight {
			out.Insert(key.PodUID)
		}
	}
	return out
}
