package volumemanager

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/nodeagent-io/nodeagent/pkg/podrefs"
	"github.com/nodeagent-io/nodeagent/pkg/volumemanager/atomicwriter"
	"github.com/nodeagent-io/nodeagent/pkg/volumemanager/cache"
	"github.com/nodeagent-io/nodeagent/pkg/volumemanager/inplacewriter"
	"github.com/nodeagent-io/nodeagent/pkg/volumemanager/reconciler"
)

// volumeDirMode is the mode of a volume's own directory: the kubelet
// creates ConfigMap and projected volumes inside an emptyDir, whose
// directory is world-writable.
const volumeDirMode os.FileMode = 0o777

// writeVolume is the atomic writer; tests count its calls.
var writeVolume = atomicwriter.Write

// executor does the disk work of the reconciler's operations: it is the
// volume manager's reconciler.Executor.
type executor struct {
	configMaps      ConfigMapGetter
	nodeAllocatable func() (corev1.ResourceList, error)
	diskLimiter     DiskLimiter
	clock           clock.PassiveClock
}

// TearDown removes the volume's directory.
func (e *executor) TearDown(ctx context.Context, op reconciler.Operation) error {
	return e.onDisk(ctx, func() error { return os.RemoveAll(op.Dir) })
}

// onDisk runs work, which touches the disk, holding a slot of the
// DiskLimiter if there is one.
func (e *executor) onDisk(ctx context.Context, work func() error) error {
	if e.diskLimiter == nil {
		return work()
	}
	if err := e.diskLimiter.Acquire(ctx, 1); err != nil {
		return fmt.Errorf("waiting for the disk: %w", err)
	}
	defer e.diskLimiter.Release(1)
	return work()
}

// SetUp writes the volume of op (a mount or a remount) in the kubelet's
// order:
//
//	(1) compute the payload, reading the ConfigMaps: an error here leaves
//	    the disk untouched;
//	(2) make the volume directory, mode 0777 whatever the umask;
//	(3) make the mount points of other volumes that a container mounts
//	    inside this one, so the container runtime finds them;
//	(4) write the payload atomically, applying the pod's fsGroup to the
//	    new generation before it becomes visible, and stamp the result;
//	    or, for a volume of LayoutInPlace, rewrite each changed file in
//	    place (inplacewriter), which leaves nothing to stamp.
//
// A remount whose payload has the content hash of what the volume holds,
// and whose stamp shows nothing on disk changed since (a few lstat calls),
// stops after (1): the kubelet's writer would read every file back to find
// them equal. Anything else, damage included, takes the full path, which
// compares the files and repairs what differs (docs/reliability.md).
//
// An error in a first mount removes the directory it made, so there is no
// volume, as in the kubelet. An error in a remount leaves the previous
// content readable (the kubelet deletes the volume after a failed write;
// nodeagent keeps it).
func (e *executor) SetUp(ctx context.Context, logger klog.Logger, op reconciler.Operation) (res reconciler.Result, err error) {
	// (1)
	payload, rv, err := volumePayload(op.Spec, op.Pod, payloadSources{configMaps: e.configMaps, nodeAllocatable: e.nodeAllocatable})
	if err != nil {
		return reconciler.Result{}, err
	}
	res = reconciler.Result{ResourceVersion: rv, ContentHash: contentHash(payloadBytes(payload))}
	err = e.onDisk(ctx, func() error {
		if op.Kind == reconciler.Remount && res.ContentHash == op.LastHash && op.LastStamp.Intact(op.Dir) {
			res.Stamp = op.LastStamp
			return nil
		}
		res.Wrote, res.Stamp, err = e.writeVolume(logger, op, payload)
		return err
	})
	if err != nil {
		return reconciler.Result{}, err
	}
	return res, nil
}

// writeVolume does steps (2) to (4) of setUp.
func (e *executor) writeVolume(logger klog.Logger, op reconciler.Operation, payload map[string]atomicwriter.FileProjection) (wrote bool, stamp atomicwriter.Stamp, err error) {
	pod, v, dir := op.Pod, op.Spec, op.Dir
	// (2)
	if _, statErr := os.Lstat(dir); errors.Is(statErr, fs.ErrNotExist) {
		defer func() {
			if err != nil {
				_ = os.RemoveAll(dir)
			}
		}()
	}
	if err := ensureVolumeDir(dir); err != nil {
		return false, stamp, err
	}
	// (3)
	if err := makeNestedMountpoints(pod, v.Name, dir); err != nil {
		return false, stamp, err
	}
	// (4)
	if op.Layout == cache.LayoutInPlace {
		wrote, err = inplacewriter.Write(dir, payload, podFSGroup(pod))
	} else {
		var setPerms func() error
		if fsGroup := podFSGroup(pod); fsGroup != nil {
			setPerms = func() error { return setVolumeOwnership(logger, dir, *fsGroup) }
		}
		wrote, err = writeVolume(dir, payload, setPerms)
	}
	if err != nil {
		cause := CauseDisk
		if errors.Is(err, atomicwriter.ErrInvalidPath) {
			cause = CauseInvalidPayload
		}
		return false, stamp, failure(cause, fmt.Errorf("writing volume %s to %s: %w", v.Name, dir, err))
	}
	stamp, stampErr := atomicwriter.StampOf(dir, slices.Collect(maps.Keys(payload)), e.clock.Now())
	if stampErr != nil {
		// Written, but not stamped: the next remount compares in full.
		logger.V(2).Info("Stamping the volume failed", "err", stampErr)
	}
	return wrote, stamp, nil
}

// ensureVolumeDir makes dir with permissions 0777, as the kubelet's emptyDir
// wrapper does, correcting them only when they differ: a chmod would also
// clear the setgid bit that an fsGroup set.
func ensureVolumeDir(dir string) error {
	if err := os.MkdirAll(dir, volumeDirMode); err != nil {
		return err
	}
	info, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if info.Mode().Perm() != volumeDirMode {
		return os.Chmod(dir, volumeDirMode)
	}
	return nil
}

// makeNestedMountpoints creates, inside the volume, the directories on
// which a container mounts another volume beneath this volume's mount path
// (only the outermost of a chain of nested mounts). The writer leaves them
// alone: they are not part of the payload.
func makeNestedMountpoints(pod *corev1.Pod, volume, dir string) error {
	var errs []string
	podrefs.VisitContainers(pod, func(c *corev1.Container) {
		var mine, all []string
		for _, mount := range c.VolumeMounts {
			p := filepath.Clean(mount.MountPath)
			all = append(all, p)
			if mount.Name == volume {
				mine = append(mine, p)
			}
		}
		for _, base := range mine {
			if strings.HasPrefix(base, "../") {
				errs = append(errs, fmt.Sprintf("container %s mounts the volume at %q, outside its root", c.Name, base))
				continue
			}
			for _, nested := range outermostBeneath(base, all) {
				if strings.HasPrefix(nested, "..") {
					errs = append(errs, fmt.Sprintf("container %s mounts a volume at %q, a name the volume's writer reserves", c.Name, filepath.Join(base, nested)))
					continue
				}
				if err := os.MkdirAll(filepath.Join(dir, nested), 0o755); err != nil {
					errs = append(errs, fmt.Sprintf("making the nested mount point %q: %v", nested, err))
				}
			}
		}
	})
	if len(errs) > 0 {
		return fmt.Errorf("nested mount points: %s", strings.Join(errs, "; "))
	}
	return nil
}

// outermostBeneath returns the paths of all that lie beneath base, relative
// to it, leaving out those beneath another such path.
func outermostBeneath(base string, all []string) []string {
	prefix := base + "/"
	if base == "/" {
		prefix = "/"
	}
	var beneath []string
	for _, p := range all {
		if p != base && strings.HasPrefix(p, prefix) {
			beneath = append(beneath, p)
		}
	}
	var out []string
	for _, p := range beneath {
		outermost := true
		for _, q := range beneath {
			if q != p && strings.HasPrefix(p, q+"/") {
				outermost = false
			}
		}
		if outermost {
			out = append(out, strings.TrimPrefix(p, prefix))
		}
	}
	return out
}

func podFSGroup(pod *corev1.Pod) *int64 {
	if pod.Spec.SecurityContext == nil {
		return nil
	}
	return pod.Spec.SecurityContext.FSGroup
}

// setVolumeOwnership gives everything under dir, dir included, the group
// fsGroup and makes it readable by that group, as the kubelet does for a
// read-only volume: files gain r--r-----, directories also gain x and the
// setgid bit. Symlinks change owner only. Like the kubelet, it carries on
// past a file it cannot change, and logs it.
func setVolumeOwnership(logger klog.Logger, dir string, fsGroup int64) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := os.Lchown(p, -1, int(fsGroup)); err != nil {
			logger.Error(err, "Changing the group of a volume file failed", "path", p, "fsGroup", fsGroup)
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		mask := os.FileMode(0o440)
		if d.IsDir() {
			mask |= os.ModeSetgid | 0o110
		}
		if err := os.Chmod(p, info.Mode()|mask); err != nil {
			logger.Error(err, "Changing the mode of a volume file failed", "path", p, "fsGroup", fsGroup)
		}
		return nil
	})
}
