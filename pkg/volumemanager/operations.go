package volumemanager

import "time"

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
	inFlight bool
	// changedMeanwhile: a ConfigMap the volume reads changed while the
	// operation ran, perhaps after its read; the volume is read again
	// when it ends, whatever the outcome.
	changedMeanwhile bool
	// err is the last failed operation's error, failedAt when it ended.
	err      string
	failedAt time.Time
	// retryDelay is how long after failedAt the next try waits; 0 means
	// at once (never failed, or the wait was cancelled).
	retryDelay time.Duration
}

// op returns key's record, making one. Called with m.mu held.
func (m *Manager) op(key volumeKey) *volumeOp {
	o, ok := m.ops[key]
	if !ok {
		o = &volumeOp{}
		m.ops[key] = o
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
	o.err, o.failedAt = err.Error(), now
}

// waiting says whether a failed volume still waits for its retry at now.
func (o *volumeOp) waiting(now time.Time) bool {
	return o.retryDelay > 0 && now.Sub(o.failedAt) < o.retryDelay
}
