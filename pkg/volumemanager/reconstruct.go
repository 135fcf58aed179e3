package volumemanager

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/nodeagent-io/nodeagent/pkg/volumemanager/atomicwriter"
)

// reconstruct rebuilds the actual state from the volume directories under
// the root dir, repairing crash leftovers in each, and returns how many it
// found. A reconstructed volume has no pod until its pod's first sync, which
// flags it for a remount.
func (m *Manager) reconstruct() (int, error) {
	var dirs []string
	for _, plugin := range Plugins {
		found, err := filepath.Glob(VolumeDir(m.opts.RootDir, "*", plugin, "*"))
		if err != nil {
			return 0, err
		}
		dirs = append(dirs, found...)
	}
	var errs []error
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, dir := range dirs {
		info, err := os.Stat(dir)
		if err != nil || !info.IsDir() {
			continue
		}
		podUID := filepath.Base(filepath.Dir(filepath.Dir(filepath.Dir(dir))))
		key := volumeKey{types.UID(podUID), filepath.Base(dir)}
		if _, known := m.actual[key]; known {
			continue // mounted by this manager already: not a leftover
		}
		if err := atomicwriter.Repair(dir); err != nil {
			errs = append(errs, err)
		}
		files, err := atomicwriter.ReadCurrent(dir)
		if err != nil {
			errs = append(errs, err)
		}
		spec := Volume{Name: key.volume, Plugin: Plugin(filepath.Base(filepath.Dir(dir)))}
		m.actual[key] = &mountedVolume{key: key, spec: spec, dir: dir, contentHash: contentHash(files)}
		m.handOver(key) // kept, adopted or unmounted once its pod is known
	}
	m.notifyChanged()
	return len(dirs), errors.Join(errs...)
}

// RemoveOrphanedPodDirs deletes <root>/pods/<uid> for every pod that is not
// active, not desired and has no volume on disk: what is left of a pod
// after its teardown, or of a pod deleted while the agent was down.
func (m *Manager) RemoveOrphanedPodDirs() (removed int, err error) {
	m.mu.Lock()
	active := m.active
	m.mu.Unlock()
	if !active.Synced {
		return 0, nil
	}
	entries, err := os.ReadDir(filepath.Join(m.opts.RootDir, "pods"))
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	inUse := sets.New[types.UID]()
	for key := range m.actual {
		inUse.Insert(key.podUID)
	}
	for key, o := range m.ops {
		if o.inFlight {
			inUse.Insert(key.podUID)
		}
	}
	var errs []error
	for _, e := range entries {
		uid := types.UID(e.Name())
		if _, desired := m.desired[uid]; desired || active.UIDs.Has(uid) || inUse.Has(uid) {
			continue
		}
		if err := os.RemoveAll(filepath.Join(m.opts.RootDir, "pods", e.Name())); err != nil {
			errs = append(errs, err)
			continue
		}
		removed++
	}
	return removed, errors.Join(errs...)
}
