package volumemanager

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/nodeagent-io/nodeagent/internal/testutil"
)

// The manager's loops run on what gives them work: a marked pod, a failed
// mount's retry coming due (which nothing kicks), a change of the active
// pods. Nothing else moves them: without the retry time or the kick, the
// volume would never mount or never go.
func TestManagerLoopsFollowTheirWork(t *testing.T) {
	h := newHarness(t)
	pod := newPod("p", volumeSpec{name: "v", configMap: "cfg"}) // cfg missing: the first mount fails
	h.mark(pod)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { h.m.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })

	start := h.clock.Now()
	failed := func() bool {
		h.clock.Step(10 * time.Millisecond)
		h.events.mu.Lock()
		defer h.events.mu.Unlock()
		return len(h.events.events) > 0
	}
	testutil.WaitFor(t, "the volume manager's state", failed)
	h.cms.set("cfg", map[string]string{"a": "1"})
	mounted := func() bool {
		h.clock.Step(10 * time.Millisecond)
		_, err := h.read(pod, "v", "a")
		return err == nil
	}
	testutil.WaitFor(t, "the volume manager's state", mounted)
	if took := h.clock.Since(start); took < 500*time.Millisecond {
		t.Errorf("mounted %v after the start, before the failure's backoff of 500ms", took)
	}

	h.setActive(func(active sets.Set[types.UID]) { active.Delete(pod.UID) })
	testutil.WaitFor(t, "the volume manager's state", func() bool {
		h.clock.Step(10 * time.Millisecond)
		return len(h.m.Volumes()) == 0
	})
}
