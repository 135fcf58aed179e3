package volumemanager

import (
	"context"
	"fmt"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

// reconcile is one pass of the reconciler: it starts the operations that
// bring the actual state towards the desired state, and never waits for
// one. It looks only at the pending volumes: those the populator,
// RemountConfigMap or a finished operation handed over since its last
// pass, and those still waiting (for a retry after a failure, or for the
// first sync of a reconstructed volume's pod). In steady state there are
// none, and a pass costs a lock and a clock read.
//
// It returns when the earliest retry among the volumes left waiting comes
// due, or the zero time if none waits for a time: the others wait for
// something that hands them over again (their pod's processing, a change
// of the active pods).
func (m *Manager) reconcile(ctx context.Context) (retryAt time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	active := m.active
	now := m.clock.Now()
	for key := range m.pending {
		if m.reconcileVolume(ctx, key, now, active) {
			delete(m.pending, key)
			continue
		}
		if o, ok := m.ops[key]; ok && o.waiting(now) {
			if at := o.failedAt.Add(o.retryDelay); retryAt.IsZero() || at.Before(retryAt) {
				retryAt = at
			}
		}
	}
	return retryAt
}

// reconcileVolume starts what one volume needs, if anything, and says
// whether it is settled: false keeps it pending for the next pass. Called
// with m.mu held.
func (m *Manager) reconcileVolume(ctx context.Context, key volumeKey, now time.Time, active ActivePodSet) (settled bool) {
	o, recorded := m.ops[key]
	if recorded && o.inFlight {
		return true // finish hands it back
	}
	dp, desired := m.desired[key.podUID]
	if desired && !dp.processed {
		return false // the populator reads the pod first
	}
	var spec Volume
	var wanted bool
	if desired {
		spec, wanted = dp.volumes[key.volume]
	}
	v, mounted := m.actual[key]
	switch {
	case !wanted && !mounted:
		// Gone, or never mounted: a failure is no longer news.
		delete(m.ops, key)
		return true
	case !wanted && !desired && (!active.Synced || active.UIDs.Has(key.podUID)):
		// A volume reconstructed from disk whose pod has not synced yet,
		// or whose pod source has not listed every pod: kept.
		return false
	case recorded && o.waiting(now):
		return false // retried once its backoff has passed
	case !wanted:
		m.start(ctx, operation{kind: OpUnmount, key: key, pod: v.pod, spec: v.spec, dir: v.dir})
	case !mounted:
		dir := VolumeDir(m.opts.RootDir, string(key.podUID), spec.Plugin, key.volume)
		m.start(ctx, operation{kind: OpMount, key: key, pod: dp.pod, spec: spec, dir: dir})
	case v.remountRequired:
		// Cleared now, so that a reprocess during the remount flags it
		// again instead of being lost.
		v.remountRequired = false
		m.start(ctx, operation{kind: OpRemount, key: key, pod: dp.pod, spec: spec, dir: v.dir, lastHash: v.contentHash, lastStamp: v.stamp})
	}
	return true
}

// onDisk runs work, which touches the disk, holding a slot of the
// DiskLimiter if there is one.
func (m *Manager) onDisk(ctx context.Context, work func() error) error {
	if m.opts.DiskLimiter == nil {
		return work()
	}
	if err := m.opts.DiskLimiter.Acquire(ctx, 1); err != nil {
		return fmt.Errorf("waiting for the disk: %w", err)
	}
	defer m.opts.DiskLimiter.Release(1)
	return work()
}

// settled says whether a volume with no operation in flight needs nothing
// from the reconciler: on disk, wanted by its pod and not flagged for a
// remount, or neither on disk nor wanted, and not failing. Called with m.mu
// held.
func (m *Manager) settled(key volumeKey) bool {
	if o, ok := m.ops[key]; ok && (o.inFlight || o.err != "") {
		return false
	}
	var wanted bool
	if dp, desired := m.desired[key.podUID]; desired {
		if !dp.processed {
			return false
		}
		_, wanted = dp.volumes[key.volume]
	}
	v, mounted := m.actual[key]
	return mounted == wanted && !(mounted && v.remountRequired)
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
			err = m.onDisk(ctx, func() error { return os.RemoveAll(op.dir) })
		} else {
			res, err = m.setUp(ctx, logger, op)
		}
		m.opts.Recorder.OperationDone(op.kind, err, m.clock.Since(begin))
		if res.wrote {
			m.opts.Recorder.VolumeWritten()
		}
		m.finish(ctx, logger, op, res, err)
	}()
}

// finish records an operation's result in the actual state, and reports a
// failure as a FailedMount event on the pod, for a remount as for a first
// mount.
func (m *Manager) finish(ctx context.Context, logger klog.Logger, op operation, res setUpResult, err error) {
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
		v.pod, v.spec, v.resourceVersion, v.contentHash, v.stamp = op.pod, op.spec, res.resourceVersion, res.contentHash, res.stamp
		v.remountRequired = v.remountRequired || changed
		delete(m.ops, op.key)
	}
	// What changed while it ran, or its failure, is for the next pass.
	if !m.settled(op.key) {
		m.handOver(op.key)
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
	if ctx.Err() != nil {
		// The manager is stopping: the operation was cut short, not failed.
		logger.V(2).Info("Volume operation abandoned at shutdown", "err", err)
		return
	}
	logger.Error(err, "Volume operation failed; will retry with backoff")
	if op.pod != nil && m.opts.Events != nil && op.kind != OpUnmount {
		m.opts.Events.Eventf(op.pod, corev1.EventTypeWarning, "FailedMount",
			"MountVolume.SetUp failed for volume %q: %v", op.key.volume, err)
	}
}
