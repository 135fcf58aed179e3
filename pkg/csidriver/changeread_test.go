package csidriver

import (
	"sync"
	"testing"
	"time"

	"github.com/nodeagent-io/nodeagent/pkg/podrefs"
	"github.com/nodeagent-io/nodeagent/pkg/volumemanager/reconciler"
)

// delayRecorder keeps the delays of the changes the volumes read.
type delayRecorder struct {
	mu     sync.Mutex
	delays []time.Duration
}

func (r *delayRecorder) OperationDone(reconciler.OperationKind, error, time.Duration) {}
func (r *delayRecorder) VolumesMounted(int)                                           {}
func (r *delayRecorder) VolumeWritten()                                               {}
func (r *delayRecorder) ChangeRead(d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.delays = append(r.delays, d)
}

func (r *delayRecorder) recorded() []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]time.Duration(nil), r.delays...)
}

// A change the watch delivers is recorded with its delay once the volume
// holds it: the driver's share of an update's delay, which the metric
// nodeagent_volume_change_read_seconds shows.
func TestChangeReadIsRecorded(t *testing.T) {
	t.Parallel()
	h := newHarness(t, configMap("app", map[string]string{"k": "1"}))
	h.halt()
	recorder := &delayRecorder{}
	h.recorder = recorder
	h.start()
	v := h.newVolume("uid-1", "config", map[string]string{podrefs.AttrConfigMap: "app"})
	h.mustPublish(v)
	// The watch's first list may count as a change of the new volume.
	h.eventually("the watch open", func() bool { return h.driver.Watching() == 1 })
	seen := len(recorder.recorded())
	h.setConfigMap("app", map[string]string{"k": "2"})
	h.eventually("the update is in the volume", func() bool { return h.read(v, "k") == "2" })
	h.eventually("its delay recorded", func() bool { return len(recorder.recorded()) > seen })
	for _, d := range recorder.recorded() {
		if d < 0 || d > 10*time.Second {
			t.Errorf("a change's delay of %s, want at least 0 and within the test's wait", d)
		}
	}
}
