package volumemanager

import (
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeagent-io/nodeagent/pkg/volumemanager/cache"
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
	for volume, want := range map[string]Cause{
		"missing": CauseObjectNotFound, "unreadable": CauseNotReadable, "key": CauseKeyMissing, "path": CauseInvalidPayload,
	} {
		f, ok := h.m.reconciler.Failure(cache.VolumeKey{PodUID: pod.UID, Volume: volume})
		if !ok {
			t.Errorf("%s: no failure", volume)
			continue
		}
		if got := CauseOf(f.Err); got != want {
			t.Errorf("%s: cause %s of %v, want %s", volume, got, f.Err, want)
		}
	}
}
