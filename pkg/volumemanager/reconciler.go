package volumemanager

import (
	"context"
	"os"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
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
		dp.volumes = PodVolumes(dp.pod)
		dp.processed = true
		for name, spec := range dp.volumes {
			if v, ok := m.actual[volumeKey{uid, name}]; ok {
				// Also adopts volumes reconstructed from disk.
				v.pod, v.spec = dp.pod, spec
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

	// (1) Unmount what no pod wants. A volume whose pod is not desired is
	// kept while the pod source has not synced, or while its pod is still
	// active (a volume reconstructed from disk, waiting for its pod's first
	// sync after a restart).
	for key, v := range m.actual {
		if m.inFlight(key) {
			continue
		}
		if dp, ok := m.desired[key.podUID]; ok {
			if _, wanted := dp.volumes[key.volume]; wanted || !dp.processed {
				continue
			}
		} else if !synced || active.Has(key.podUID) {
			continue
		}
		m.start(ctx, operation{kind: OpUnmount, key: key, pod: v.pod, spec: v.spec, dir: v.dir})
	}

	// (2) Mount what is missing and remount what is flagged, unless the
	// volume waits to retry after a failure. Only volumes with a record
	// (in flight or failed) cost more than the two map lookups.
	for uid, dp := range m.desired {
		if !dp.processed {
			continue
		}
		for name, spec := range dp.volumes {
			key := volumeKey{uid, name}
			if o, ok := m.ops[key]; ok && (o.inFlight || o.waiting(now)) {
				continue
			}
			v, mounted := m.actual[key]
			switch {
			case !mounted:
				dir := VolumeDir(m.opts.RootDir, string(uid), spec.Plugin, name)
				m.start(ctx, operation{kind: OpMount, key: key, pod: dp.pod, spec: spec, dir: dir})
			case v.remountRequired:
				// Cleared now, so that a reprocess during the remount
				// flags it again instead of being lost.
				v.remountRequired = false
				m.start(ctx, operation{kind: OpRemount, key: key, pod: dp.pod, spec: spec, dir: v.dir})
			}
		}
	}

	// Failures of volumes no pod wants any more are no longer news.
	for key, o := range m.ops {
		if _, ok := m.desired[key.podUID]; !ok && !o.inFlight {
			delete(m.ops, key)
		}
	}
}

// start runs one operation in its own goroutine. Called with m.mu held.
func (m *Manager) start(ctx context.Context, op operation) {
	m.op(op.key).inFlight = true
	m.running.Add(1)
	go func() {
		defer m.running.Done()
		logger := klog.FromContext(ctx).WithValues("operation", op.kind, "volume", op.key.volume, "podUID", op.key.podUID)
		if op.pod != nil {
			logger = logger.WithValues("pod", klog.KObj(op.pod))
		}
		begin := m.clock.Now()
		var res setUpResult
		var err error
		if op.kind == OpUnmount {
			err = os.RemoveAll(op.dir)
		} else {
			res, err = m.setUp(logger, op.pod, op.spec, op.dir)
		}
		m.opts.Recorder.OperationDone(op.kind, err, m.clock.Since(begin))
		if res.wrote {
			m.opts.Recorder.VolumeWritten()
		}
		m.finish(logger, op, res, err)
	}()
}

// finish records an operation's result in the actual state, and reports a
// failure as a FailedMount event on the pod, for a remount as for a first
// mount.
func (m *Manager) finish(logger klog.Logger, op operation, res setUpResult, err error) {
	m.mu.Lock()
	o := m.op(op.key)
	// A ConfigMap change seen while the operation ran may have come after
	// its read: read again now, whatever the outcome.
	changed := o.changedMeanwhile
	o.inFlight, o.changedMeanwhile = false, false
	v, mounted := m.actual[op.key]
	switch {
	case err != nil:
		o.failed(err, m.clock.Now(), changed)
		if mounted {
			v.remountRequired = v.remountRequired || op.kind == OpRemount
		}
	case op.kind == OpUnmount:
		delete(m.actual, op.key)
		delete(m.ops, op.key)
	default:
		if !mounted {
			v = &mountedVolume{key: op.key, dir: op.dir}
			m.actual[op.key] = v
		}
		v.pod, v.spec, v.resourceVersion, v.contentHash = op.pod, op.spec, res.resourceVersion, res.contentHash
		v.remountRequired = v.remountRequired || changed
		delete(m.ops, op.key)
	}
	if changed {
		m.wakeReconciler()
	}
	m.notifyChanged()
	m.mu.Unlock()

	if err == nil {
		logger.V(4).Info("Volume operation succeeded", "resourceVersion", res.resourceVersion)
		return
	}
	logger.Error(err, "Volume operation failed; will retry with backoff")
	if op.pod != nil && m.opts.Events != nil && op.kind != OpUnmount {
		m.opts.Events.Eventf(op.pod, corev1.EventTypeWarning, "FailedMount",
			"MountVolume.SetUp failed for volume %q: %v", op.key.volume, err)
	}
}
