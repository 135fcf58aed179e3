package volumemanager

import (
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
)

// ActivePodSet is what Options.ActivePods returns: the pods that should
// keep their volumes.
type ActivePodSet struct {
	UIDs sets.Set[types.UID]
	// Synced: the pod source has listed every pod. Until it has, no volume
	// is unmounted and no pod is dropped.
	Synced bool
	// Version changes whenever UIDs or Synced does. The populator compares
	// UIDs with the desired state only when it has changed, so a pass over
	// an unchanged node does not look at every pod.
	Version uint64
}

// populate is one pass of the desired-state populator: drop pods that are
// no longer active, and re-read the pods marked for reprocessing, flagging
// their mounted volumes for a remount. Its work is in proportion to what
// changed since the last pass: the pods marked meanwhile, and the desired
// pods only when the active set has a new version.
//
// It asks activePods for the set only once it holds the lock. A pod's
// first sync marks it (under the lock) after the pod source counted it
// active, so every pod marked before the pass is in the set the pass
// compares with. A set taken before the lock could predate a pod marked
// while the pass waited for it, and drop that pod as deleted: its volumes
// would then never mount.
func (m *Manager) populate(activePods func() ActivePodSet) {
	m.mu.Lock()
	defer m.mu.Unlock()
	active := activePods()
	if active.Synced && (!m.activeSeen || active.Version != m.activeVersion) {
		for uid := range m.desired {
			if !active.UIDs.Has(uid) {
				m.dropDesired(uid)
			}
		}
		m.activeSeen, m.activeVersion = true, active.Version
		// Volumes kept for pods that were active may go now.
		m.reconcilerLoop.kick()
	}
	for uid := range m.unprocessed {
		dp, ok := m.desired[uid]
		switch {
		case !ok:
			// Removed since it was marked.
		case active.Synced && !active.UIDs.Has(uid):
			// Marked by a sync that raced with the pod's deletion.
			m.dropDesired(uid)
		default:
			m.process(uid, dp)
		}
	}
	clear(m.unprocessed)
}

// process re-reads one marked pod's volumes, flags those on disk for a
// remount (which also adopts volumes reconstructed from disk), and hands
// every volume it had or has to the reconciler. Called with m.mu held.
func (m *Manager) process(uid types.UID, dp *desiredPod) {
	for name := range dp.volumes {
		m.handOver(volumeKey{uid, name}) // in case one is gone
	}
	dp.volumes = PodVolumes(dp.pod)
	dp.processed = true
	for name, spec := range dp.volumes {
		key := volumeKey{uid, name}
		if v, ok := m.actual[key]; ok {
			v.pod, v.spec = dp.pod, spec
			v.remountRequired = true
		}
		m.handOver(key)
	}
}

// markPod adds or updates pod in the desired state and marks it for the
// populator's next pass (the kubelet's ReprocessPod). Called with m.mu held.
func (m *Manager) markPod(dp *desiredPod) {
	uid := dp.pod.UID
	if known, ok := m.desired[uid]; ok {
		known.pod, known.processed = dp.pod, false
	} else {
		m.desired[uid] = dp
	}
	m.unprocessed.Insert(uid)
	m.populatorLoop.kick()
}

// handOver makes key pending: the reconciler looks at it at its next
// pass. Called with m.mu held.
func (m *Manager) handOver(key volumeKey) {
	m.pending.Insert(key)
	m.reconcilerLoop.kick()
}

// ActivePodsChanged tells the manager that the set Options.ActivePods
// returns may have changed (a pod added, updated or deleted; the pod
// source synced): the populator compares it with the desired state at its
// next pass. The loops run only when something gives them work, so a
// change to the set that is not reported waits for the next one that is.
func (m *Manager) ActivePodsChanged() {
	m.populatorLoop.kick()
}

// dropDesired removes a pod from the desired state and hands its volumes
// to the reconciler, which unmounts them. Called with m.mu held.
func (m *Manager) dropDesired(uid types.UID) {
	dp, ok := m.desired[uid]
	if !ok {
		return
	}
	for name := range dp.volumes {
		m.handOver(volumeKey{uid, name})
	}
	delete(m.desired, uid)
	delete(m.unprocessed, uid)
}
