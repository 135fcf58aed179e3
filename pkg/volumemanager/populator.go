package volumemanager

import (
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
)

// ActivePodSet is what SetActivePods hands in: the pods that should keep
// their volumes.
type ActivePodSet struct {
	UIDs sets.Set[types.UID]
	// Synced: the pod source has listed every pod. Until it has, no volume
	// is unmounted and no pod is dropped.
	Synced bool
}

// SetActivePods hands the manager the pods that should keep their volumes,
// and has the populator compare them with the desired state at its next
// pass. The manager keeps set and only reads it: the caller must not
// change it afterwards. A pod must be in a set handed in before its first
// WaitForAttachAndMount; the manager takes no other word on which pods
// exist, and calls nothing of the caller's under its lock.
//
// That order is what keeps a new pod: the set with the pod is in place
// before the pod's sync can mark it, so the pass that processes the mark
// compares with a set that holds the pod. (When the manager asked the
// caller for the set, it had to ask with its lock held for the same
// guarantee, and the caller's lock ranked below the manager's.)
func (m *Manager) SetActivePods(set ActivePodSet) {
	m.mu.Lock()
	m.active, m.activeChanged = set, true
	m.mu.Unlock()
	m.populatorLoop.kick()
}

// populate is one pass of the desired-state populator: drop pods that are
// no longer active, and re-read the pods marked for reprocessing, flagging
// their mounted volumes for a remount. Its work is in proportion to what
// changed since the last pass: the pods marked meanwhile, and the desired
// pods only when a new active set has been handed in.
func (m *Manager) populate() {
	m.mu.Lock()
	defer m.mu.Unlock()
	active := m.active
	if active.Synced && m.activeChanged {
		for uid := range m.desired {
			if !active.UIDs.Has(uid) {
				m.dropDesired(uid)
			}
		}
		m.activeChanged = false
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
