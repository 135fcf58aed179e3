package volumemanager

import (
	"context"
	"fmt"
	"os"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"

	"github.com/nodeagent-io/nodeagent/pkg/volumemanager/atomicwriter"
)

// populate is one pass of the desired-state populator: drop pods that are
// no longer active, and re-read pods marked for reprocessing, flagging
// their mounted volumes for a remount. active and synced are this tick's
// ActivePods.
func (m *Manager) populate(active sets.Set[types.UID], synced bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for uid, dp := range m.desired {
		if synced && !active.Has(uid) {
			delete(m.desired, uid)
			continue
		}
		if dp.processed {
			continue
		}
		dp.volumes = ConfigMapVolumes(dp.pod)
		dp.processed = true
		for name, source := range dp.volumes {
			if v, ok := m.actual[volumeKey{uid, name}]; ok {
				// Also adopts volumes reconstructed from disk.
				v.pod, v.source = dp.pod, source
				v.remountRequired = true
			}
		}
	}
}

// reconcile is one pass of the reconciler: it starts the operations that
// bring the actual state towards the desired state. It never waits for one.
func (m *Manager) reconcile(ctx context.Context, active sets.Set[types.UID], synced bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clock.Now()
	m.backoff.GC()

	// (1) Unmount what no pod wants. A volume whose pod is not desired is
	// kept while the pod source has not synced, or while its pod is still
	// active (a volume reconstructed from disk, waiting for its pod's first
	// sync after a restart).
	for key, v := range m.actual {
		if m.pending.Has(key) {
			continue
		}
		if dp, ok := m.desired[key.podUID]; ok {
			if _, wanted := dp.volumes[key.volume]; wanted || !dp.processed {
				continue
			}
		} else if !synced || active.Has(key.podUID) {
			continue
		}
		m.startOperation(ctx, OpUnmount, key, v.pod, v.source)
	}

	// (2) Mount what is missing and remount what is flagged, unless the
	// volume is backing off after a failure.
	for uid, dp := range m.desired {
		if !dp.processed {
			continue
		}
		for name, source := range dp.volumes {
			key := volumeKey{uid, name}
			if m.pending.Has(key) || m.backoff.IsInBackOffSinceUpdate(key.String(), now) {
				continue
			}
			v, mounted := m.actual[key]
			switch {
			case !mounted:
				m.startOperation(ctx, OpMount, key, dp.pod, source)
			case v.remountRequired:
				// Cleared now, so that a reprocess during the remount
				// flags it again instead of being lost.
				v.remountRequired = false
				m.startOperation(ctx, OpRemount, key, dp.pod, source)
			}
		}
	}

	// Failures of volumes no pod wants any more are no longer news.
	for key := range m.failing {
		if _, ok := m.desired[key.podUID]; !ok {
			delete(m.failing, key)
		}
	}
}

// startOperation runs one operation on a volume in its own goroutine.
// Called with m.mu held.
func (m *Manager) startOperation(ctx context.Context, op string, key volumeKey, pod *corev1.Pod, source *corev1.ConfigMapVolumeSource) {
	m.pending.Insert(key)
	m.ops.Add(1)
	go func() {
		defer m.ops.Done()
		start := m.clock.Now()
		dir := volumeDir(m.opts.RootDir, string(key.podUID), key.volume)
		var rv, hash string
		var err error
		if op == OpUnmount {
			err = os.RemoveAll(dir)
		} else {
			rv, hash, err = m.setUp(pod, source, dir)
		}
		m.opts.Recorder.OperationDone(op, err, m.clock.Since(start))
		m.finishOperation(ctx, op, key, pod, source, dir, rv, hash, err)
	}()
}

// setUp fetches the ConfigMap and writes the volume. Any error leaves what
// was on disk untouched.
func (m *Manager) setUp(pod *corev1.Pod, source *corev1.ConfigMapVolumeSource, dir string) (resourceVersion, hash string, err error) {
	cm, err := m.opts.ConfigMaps.GetConfigMap(pod.Namespace, source.Name)
	if err != nil {
		if !apierrors.IsNotFound(err) || !isOptional(source) {
			return "", "", fmt.Errorf("couldn't get configMap %s/%s: %w", pod.Namespace, source.Name, err)
		}
		// Optional and missing: an empty volume, which also removes the
		// files of a ConfigMap that was deleted.
		cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: source.Name}}
	}
	payload, err := Payload(source, cm)
	if err != nil {
		return "", "", err
	}
	if _, err := atomicwriter.Write(dir, payload); err != nil {
		return "", "", fmt.Errorf("writing configMap %s/%s to %s: %w", pod.Namespace, source.Name, dir, err)
	}
	return cm.ResourceVersion, contentHash(payloadBytes(payload)), nil
}

// finishOperation records an operation's result in the actual state.
func (m *Manager) finishOperation(ctx context.Context, op string, key volumeKey, pod *corev1.Pod, source *corev1.ConfigMapVolumeSource, dir, rv, hash string, err error) {
	logger := klog.FromContext(ctx).WithValues("operation", op, "volume", key.volume, "podUID", key.podUID)
	if pod != nil {
		logger = logger.WithValues("pod", klog.KObj(pod))
	}

	m.mu.Lock()
	m.pending.Delete(key)
	v, mounted := m.actual[key]
	switch {
	case err != nil:
		m.backoff.Next(key.String(), m.clock.Now())
		m.failing[key] = failure{err: err.Error(), at: m.clock.Now()}
		if mounted {
			v.lastError = err.Error()
			v.remountRequired = v.remountRequired || op == OpRemount
		}
	case op == OpUnmount:
		delete(m.actual, key)
		delete(m.failing, key)
		m.backoff.DeleteEntry(key.String())
	default:
		if !mounted {
			v = &mountedVolume{key: key, dir: dir, mountedAt: m.clock.Now()}
			m.actual[key] = v
		}
		v.pod, v.source, v.resourceVersion, v.contentHash, v.lastError = pod, source, rv, hash, ""
		delete(m.failing, key)
		m.backoff.Reset(key.String())
	}
	m.notifyChanged()
	m.mu.Unlock()

	if err == nil {
		logger.V(4).Info("Volume operation succeeded", "resourceVersion", rv)
		return
	}
	logger.Error(err, "Volume operation failed; will retry with backoff")
	if pod != nil && m.opts.Events != nil && op != OpUnmount {
		m.opts.Events.Eventf(pod, corev1.EventTypeWarning, "FailedMount",
			"MountVolume.SetUp failed for volume %q: %v", key.volume, err)
	}
}
