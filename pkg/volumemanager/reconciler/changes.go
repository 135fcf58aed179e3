package reconciler

import (
	"time"

	"github.com/nodeagent-io/nodeagent/pkg/volumemanager/cache"
)

// A change's delay: from ObjectChanged (a watch delivering a change of an
// object the volume reads) to the end of the first operation on the
// volume that started after it and succeeded, when the volume's files hold
// what the object held then or later. It is the driver's own share of an
// update's way into a container (the apiserver's write and the watch's
// delivery come before it), and, in the agent's watch mode, the
// reconciler's wait for its grid. Changes the pod syncs read are not
// counted: nothing reports when they happened.

// changeSeenLocked records at as the time of key's oldest unread change,
// unless an older one is unread. Called with r.mu held.
func (r *Reconciler) changeSeenLocked(key cache.VolumeKey, at time.Time) {
	if _, ok := r.unread[key]; !ok {
		r.unread[key] = at
	}
}

// takeChangeLocked returns and forgets key's oldest unread change, as an
// operation that will read it starts; zero where there is none. Called
// with r.mu held.
func (r *Reconciler) takeChangeLocked(key cache.VolumeKey) time.Time {
	at := r.unread[key]
	delete(r.unread, key)
	return at
}

// changeRead records the delay of the change an operation started after
// (changed, zero for none) where it succeeded; an unmount reads nothing.
// A failed one leaves the change unread (unreadAgainLocked).
func (r *Reconciler) changeRead(op Operation, changed time.Time, err error) {
	if err == nil && !changed.IsZero() && op.Kind != Unmount {
		r.opts.Recorder.ChangeRead(r.clock.Since(changed))
	}
}

// unreadAgainLocked leaves the change a failed operation started after
// unread, for the operation that retries it. Called with r.mu held.
func (r *Reconciler) unreadAgainLocked(key cache.VolumeKey, changed time.Time) {
	if later, ok := r.unread[key]; !changed.IsZero() && (!ok || changed.Before(later)) {
		r.unread[key] = changed
	}
}
