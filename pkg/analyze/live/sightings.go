package live

import (
	"sync"
	"time"

	"github.com/nodeagent-io/nodeagent/pkg/analyze"
)

// sightings remembers the pods the pods informer saw on their nodes in the
// arrival window: running, finished, and gone since (which a one-shot
// run cannot see: a Job's pods deleted as they finish are churn all the
// same). The churn's estimate reads them at each computation
// (analyze.Cluster.WithArrivals); a pod created before the window is
// forgotten.
type sightings struct {
	window time.Duration
	now    func() time.Time

	mu    sync.Mutex
	byPod map[podName]analyze.Sighting
}

// podName names a pod.
type podName struct{ namespace, name string }

func newSightings(window time.Duration, now func() time.Time) *sightings {
	return &sightings{window: window, now: now, byPod: map[podName]analyze.Sighting{}}
}

// seen records what e says of its pod: where and when it arrived, and
// whether it finished. An entry with nothing packed (a pod not yet bound,
// or being deleted) changes nothing: a deleted pod's going is gone's.
func (s *sightings) seen(e *podEntry) {
	if e.packed == nil {
		return
	}
	info := unpackPod(e.namespace, e.name, e.node.Value(), e.packed)
	if s.now().Sub(info.Created) > s.window {
		return
	}
	sighting := analyze.SightingOfPod(info)
	if e.run != nil {
		sighting.Started, sighting.Ended = e.run.started, e.run.ended
	}
	sighting.Finished = e.Finished
	s.mu.Lock()
	defer s.mu.Unlock()
	s.byPod[podName{e.namespace, e.name}] = sighting
}

// gone records that e's pod left its node now, where it had not finished
// before.
func (s *sightings) gone(e *podEntry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := podName{e.namespace, e.name}
	if sighting, ok := s.byPod[k]; ok && sighting.Ended.IsZero() {
		sighting.Ended = s.now()
		s.byPod[k] = sighting
	}
}

// current are the sightings of pods created in the window, those before
// it forgotten.
func (s *sightings) current() []analyze.Sighting {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]analyze.Sighting, 0, len(s.byPod))
	for k, sighting := range s.byPod {
		if now.Sub(sighting.Created) > s.window {
			delete(s.byPod, k)
			continue
		}
		out = append(out, sighting)
	}
	return out
}
