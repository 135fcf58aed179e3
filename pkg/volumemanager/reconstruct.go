package volumemanager

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/nodeagent-io/nodeagent/pkg/podrefs"
	"github.com/nodeagent-io/nodeagent/pkg/volumemanager/atomicwriter"
	"github.com/nodeagent-io/nodeagent/pkg/volumemanager/cache"
	"github.com/nodeagent-io/nodeagent/pkg/volumemanager/core"
)

// reconstruct rebuilds the actual state from the volume directories under
// the root dir, repairing crash leftovers in each, and returns how many
// volumes it added to the actual state (those this manager had mounted
// already are not counted). A reconstructed volume has no pod, and is only
// kept, until its pod's first sync, which flags it for a remount.
func (m *Manager) reconstruct() (int, error) {
	var dirs []string
	for _, plugin := range podrefs.Plugins {
		found, err := filepath.Glob(podrefs.VolumeDir(m.opts.RootDir, "*", plugin, "*"))
		if err != nil {
			return 0, err
		}
		dirs = append(dirs, found...)
	}
	var errs []error
	var found []cache.MountedVolume
	for _, dir := range dirs {
		info, err := os.Stat(dir)
		if err != nil || !info.IsDir() {
			continue
		}
		podUID := filepath.Base(filepath.Dir(filepath.Dir(filepath.Dir(dir))))
		key := cache.VolumeKey{PodUID: types.UID(podUID), Volume: filepath.Base(dir)}
		if m.core.Actual().Has(key) {
			continue // mounted by this manager already: not a leftover
		}
		if err := atomicwriter.Repair(dir); err != nil {
			errs = append(errs, err)
		}
		files, err := atomicwriter.ReadCurrent(dir)
		if err != nil {
			errs = append(errs, err)
		}
		spec := podrefs.KeptVolume{Name: key.Volume, Plugin: podrefs.Plugin(filepath.Base(filepath.Dir(dir)))}
		v := cache.MountedVolume{Key: key, Spec: spec, Dir: dir, ContentHash: core.ContentHash(files)}
		if m.core.Actual().AddFound(v) {
			found = append(found, v)
		}
	}
	// Kept, adopted or unmounted once its pod is known.
	m.populator.Keep(found)
	if m.opts.Core.Recorder != nil {
		m.opts.Core.Recorder.VolumesMounted(m.core.Actual().Len())
	}
	return len(found), errors.Join(errs...)
}

// RemoveOrphanedPodDirs deletes <root>/pods/<uid> for every pod that is not
// active, not desired and has no volume on disk: what is left of a pod
// after its teardown, or of a pod deleted while the agent was down. The
// populator claims those pods first (ClaimInactive), so that none of their
// volumes can be set up while their directories go, without its lock held
// across the reads and removals: the pod informer's handlers and every
// sync's MarkPod take that lock.
func (m *Manager) RemoveOrphanedPodDirs() (removed int, err error) {
	entries, err := os.ReadDir(filepath.Join(m.opts.RootDir, "pods"))
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	pods := make([]types.UID, 0, len(entries))
	for _, e := range entries {
		pods = append(pods, types.UID(e.Name()))
	}
	orphans := m.populator.ClaimInactive(pods, func() sets.Set[types.UID] {
		return m.core.Desired().PodUIDs().Union(m.core.Busy()).Union(m.core.Actual().PodUIDs())
	})
	defer m.populator.Release(orphans)
	var errs []error
	for _, uid := range orphans {
		if err := os.RemoveAll(filepath.Join(m.opts.RootDir, "pods", string(uid))); err != nil {
			errs = append(errs, err)
			continue
		}
		removed++
	}
	return removed, errors.Join(errs...)
}
