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
// (changed, zero for none) where it succeeded, and leaves the change
// unread where it failed, for the operation that retries it. An unmount
// forgets it: the volume reads nothing more.
func (r *Reconciler) changeRead(op Operation, changed time.Time, err error) {
	switch {
	case changed.IsZero() || op.Kind == Unmount:
		return
	case err == nil:
		r.opts.Recorder.ChangeRead(r.clock.Since(changed))
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if later, ok := r.unread[op.Key]; !ok || changed.Before(later) {
		r.unread[op.Key] = changed
	}
}
