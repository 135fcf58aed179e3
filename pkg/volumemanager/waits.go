package volumemanager

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodeagent-io/nodeagent/pkg/podrefs"
	"github.com/nodeagent-io/nodeagent/pkg/volumemanager/cache"
)

// WaitForAttachAndMount marks pod for reprocessing (the populator's next
// pass re-reads its volumes and has those on disk remounted), and waits
// until every volume it mounts is on disk. A volume awaiting a remount
// counts as mounted, so in steady state this returns at once.
//
// Beyond the kubelet, which waits its full timeout (2 m 3 s) for a volume
// that cannot mount, it returns an error as soon as every missing volume
// has failed in an operation that started after the call began (as
// WaitForVolume counts them: one already running may have read the pod or
// its ConfigMaps as they were before): the pod worker then retries the pod
// after its error backoff (10 s), so a broken volume delays its healthy
// siblings' remounts by seconds, not minutes.
func (m *Manager) WaitForAttachAndMount(ctx context.Context, pod *corev1.Pod) error {
	start := m.opts.Core.Clock.Now()
	want := podrefs.KeptVolumes(pod)
	m.populator.MarkPodVolumes(pod, want)

	var failedFast error
	err := m.waitUntil(ctx, m.opts.Core.MountTimeout, func() (bool, string) {
		var missing []string
		allFailed := true
		for name := range want {
			key := cache.VolumeKey{PodUID: pod.UID, Volume: name}
			if m.core.Actual().Has(key) {
				continue
			}
			missing = append(missing, name)
			if f, ok := m.core.Failure(key); !ok || f.Started.Before(start) {
				allFailed = false
			}
		}
		sort.Strings(missing)
		unmounted := m.unmounted(pod.UID, missing)
		if len(missing) > 0 && allFailed {
			failedFast = unmounted
			return true, unmounted.Error()
		}
		return len(missing) == 0, unmounted.Error()
	})
	if err != nil {
		return err
	}
	return failedFast
}

// WaitForUnmount removes pod's volumes from the desired state and waits
// until every volume of the pod that no source wants is gone from disk.
func (m *Manager) WaitForUnmount(ctx context.Context, pod *corev1.Pod) error {
	m.populator.DropPod(pod.UID)
	return m.waitUntil(ctx, m.opts.Core.MountTimeout, func() (bool, string) {
		var left []string
		for _, name := range m.core.Actual().PodVolumes(pod.UID) {
			if _, wanted := m.core.Desired().Get(cache.VolumeKey{PodUID: pod.UID, Volume: name}); !wanted {
				left = append(left, name)
			}
		}
		sort.Strings(left)
		return len(left) == 0, fmt.Sprintf("volumes still mounted: %v", left)
	})
}

// waitPollInterval is how often WaitForAttachAndMount and WaitForUnmount
// look at the actual state, as the kubelet's do. They poll rather than wake
// on each change on purpose: pods whose syncs started together finish their
// waits together, at the same poll, and so stay on the same pod-worker
// ticks from then on and share their ConfigMaps' GETs, as the kubelet's
// pods do (docs/kubelet-behaviour.md, "Pod syncs"). The files are on disk
// as soon as the reconciler writes them either way.
const waitPollInterval = 300 * time.Millisecond

// waitUntil evaluates done at once and then every waitPollInterval, until
// it holds, ctx ends or timeout passes.
func (m *Manager) waitUntil(ctx context.Context, timeout time.Duration, done func() (bool, string)) error {
	return m.core.WaitEvery(ctx, waitPollInterval, timeout, done)
}

// UnmountedError is the volumes of a pod that are not mounted, each with
// its last failure as the reconciler recorded it (nil when none is known),
// so that CauseOf reads the cause of a pod sync's failure as it reads a
// publish call's.
type UnmountedError struct {
	Volumes  []string
	Failures []error
}

func (e *UnmountedError) Error() string {
	parts := make([]string, 0, len(e.Volumes))
	for i, name := range e.Volumes {
		if e.Failures[i] != nil {
			parts = append(parts, fmt.Sprintf("%s (%v)", name, e.Failures[i]))
		} else {
			parts = append(parts, name)
		}
	}
	return "unmounted volumes: " + strings.Join(parts, ", ")
}

// Unwrap returns the volumes' failures, in the order of Volumes.
func (e *UnmountedError) Unwrap() []error {
	var out []error
	for _, err := range e.Failures {
		if err != nil {
			out = append(out, err)
		}
	}
	return out
}

// unmounted says which volumes are not mounted and why, if known.
func (m *Manager) unmounted(uid types.UID, missing []string) *UnmountedError {
	e := &UnmountedError{Volumes: missing, Failures: make([]error, len(missing))}
	for i, name := range missing {
		if f, ok := m.core.Failure(cache.VolumeKey{PodUID: uid, Volume: name}); ok {
			e.Failures[i] = f.Err
		}
	}
	return e
}
