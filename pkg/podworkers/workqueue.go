package podworkers

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// workQueue holds, for each pod, the time its next periodic sync is due
// (the kubelet's pkg/kubelet/util/queue). A new Enqueue replaces the old
// deadline.
type workQueue struct {
	clock clock.PassiveClock
	mu    sync.Mutex
	due   map[types.UID]time.Time
}

func newWorkQueue(c clock.PassiveClock) *workQueue {
	return &workQueue{clock: c, due: map[types.UID]time.Time{}}
}

// Enqueue makes uid due after delay.
func (q *workQueue) Enqueue(uid types.UID, delay time.Duration) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.due[uid] = q.clock.Now().Add(delay)
}

// GetWork removes and returns every uid whose deadline is strictly in the
// past.
func (q *workQueue) GetWork() []types.UID {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := q.clock.Now()
	var out []types.UID
	for uid, at := range q.due {
		if at.Before(now) {
			out = append(out, uid)
			delete(q.due, uid)
		}
	}
	return out
}

// Forget drops uid, for a pod that is gone.
func (q *workQueue) Forget(uid types.UID) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.due, uid)
}
