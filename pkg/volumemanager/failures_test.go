package volumemanager

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeagent-io/nodeagent/pkg/volumemanager/cache"
	"github.com/nodeagent-io/nodeagent/pkg/volumemanager/core"
	"github.com/nodeagent-io/nodeagent/pkg/volumemanager/reconciler"
)

// Each failure keeps its cause, as classified where it happened, to
// whoever reads the reconciler's failure.
func TestFailuresKeepTheirCause(t *testing.T) {
	h := newHarness(t)
	h.cms.set("has-a", map[string]string{"a": "1"})
	h.cms.fail("unreachable", errors.New("connection refused"))
	pod := newPod("p",
		volumeSpec{name: "missing", configMap: "absent"},
		volumeSpec{name: "unreadable", configMap: "unreachable"},
		volumeSpec{name: "key", configMap: "has-a", items: []corev1.KeyToPath{{Key: "b", Path: "b"}}},
		volumeSpec{name: "path", configMap: "has-a", items: []corev1.KeyToPath{{Key: "a", Path: "x/../../a"}}},
	)
	h.sync(pod)
	for volume, want := range map[string]core.Cause{
		"missing": core.CauseObjectNotFound, "unreadable": core.CauseNotReadable, "key": core.CauseKeyMissing, "path": core.CauseInvalidPayload,
	} {
		f, ok := h.m.core.Failure(cache.VolumeKey{PodUID: pod.UID, Volume: volume})
		if !ok {
			t.Errorf("%s: no failure", volume)
			continue
		}
		if got := core.CauseOf(f.Err); got != want {
			t.Errorf("%s: cause %s of %v, want %s", volume, got, f.Err, want)
		}
	}
}

// panickingConfigMaps panics on a read of one ConfigMap: a bug in a source
// or the executor, as the reconciler sees it.
type panickingConfigMaps struct {
	*fakeConfigMaps
	name string
}

func (p panickingConfigMaps) GetConfigMap(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error) {
	if name == p.name {
		panic("a bug reading " + name)
	}
	return p.fakeConfigMaps.GetConfigMap(ctx, namespace, name)
}

// A panic in one volume's operation is that volume's failure, with its
// event on the pod: the process and the pod's other volume go on.
func TestAPanicIsTheVolumesFailure(t *testing.T) {
	h := newHarness(t)
	h.m = h.newManager(func(o *Options) { o.Core.ConfigMaps = panickingConfigMaps{h.cms, "buggy"} })
	h.cms.set("buggy", map[string]string{"a": "1"})
	h.cms.set("fine", map[string]string{"a": "1"})
	pod := newPod("p", volumeSpec{name: "bad", configMap: "buggy"}, volumeSpec{name: "good", configMap: "fine"})
	h.sync(pod)
	f, ok := h.m.core.Failure(cache.VolumeKey{PodUID: pod.UID, Volume: "bad"})
	var panicked *reconciler.PanicError
	if !ok || !errors.As(f.Err, &panicked) || panicked.Value != "a bug reading buggy" || len(panicked.Stack) == 0 {
		t.Fatalf("failure of the panicking volume: %+v, want a PanicError with its value and stack", f)
	}
	if !h.m.core.Actual().Has(cache.VolumeKey{PodUID: pod.UID, Volume: "good"}) {
		t.Error("the pod's other volume is not mounted")
	}
	h.events.mu.Lock()
	defer h.events.mu.Unlock()
	if len(h.events.events) != 1 || !strings.Contains(h.events.events[0], `FailedMount MountVolume.SetUp failed for volume "bad": the mount operation panicked: a bug reading buggy`) {
		t.Errorf("events %q, want one FailedMount that says the operation panicked", h.events.events)
	}
}
