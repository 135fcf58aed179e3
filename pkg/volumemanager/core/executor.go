package core

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"k8s.io/klog/v2"
	"k8s.io/mount-utils"
	"k8s.io/utils/clock"

	"github.com/nodeagent-io/nodeagent/pkg/volumemanager/atomicwriter"
	"github.com/nodeagent-io/nodeagent/pkg/volumemanager/cache"
	"github.com/nodeagent-io/nodeagent/pkg/volumemanager/inplacewriter"
	"github.com/nodeagent-io/nodeagent/pkg/volumemanager/reconciler"
)

// volumeDirMode is the mode of a volume's own directory: the kubelet
// creates ConfigMap and projected volumes inside an emptyDir, whose
// directory is world-writable.
const volumeDirMode os.FileMode = 0o777

// executor does the disk work of the reconciler's operations: it is the
// volume manager's reconciler.Executor.
type executor struct {
	objects     objectSources
	diskLimiter DiskLimiter
	clock       clock.PassiveClock
	// atomicWrite is Options.AtomicWrite.
	atomicWrite AtomicWrite
	// fileOwners is Options.FileOwners.
	fileOwners bool
}

// TearDown removes the volume's directory.
func (e *executor) TearDown(ctx context.Context, op reconciler.Operation) error {
	return e.onDisk(ctx, func() error { return removeVolumeDir(op.Dir) })
}

// nodeMounts is k8s.io/mount-utils' mounter, made once: making one runs
// umount(8) to learn how it behaves.
var nodeMounts = sync.OnceValue(func() mount.Interface { return mount.New("") })

// IsLikelyNotMountPoint says whether dir is not a mount point, by its
// device against its parent's (a bind mount within one file system is not
// told), as k8s.io/mount-utils does.
func IsLikelyNotMountPoint(dir string) (bool, error) {
	return nodeMounts().IsLikelyNotMountPoint(dir)
}

// removeVolumeDir removes dir and what it holds. A dir that is a mount
// point (the CSI driver's tmpfs of a volume that holds Secrets) is
// emptied and left: its mount is its source's to undo, after this.
func removeVolumeDir(dir string) error {
	notMounted, err := IsLikelyNotMountPoint(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return err
	case notMounted:
		return os.RemoveAll(dir)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, entry := range entries {
		if err := os.RemoveAll(filepath.Join(dir, entry.Name())); err != nil {
			return err
		}
	}
	return nil
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

// SetUp writes the volume of op (a mount or a remount) from its Spec and
// Request, in the kubelet's order:
//
//	(1) compute the payload, reading the ConfigMaps: an error here leaves
//	    the disk untouched;
//	(2) make the volume directory, mode 0777 whatever the umask;
//	(3) make the mount points of other volumes that a container mounts
//	    inside this one (Request.MountPoints), so the container runtime
//	    finds them;
//	(4) write the payload atomically, applying the fsGroup to the
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
	payload, rv, err := volumePayload(ctx, op.Spec, op.Request, e.objects, e.fileOwners)
	if err != nil {
		return reconciler.Result{}, err
	}
	res = reconciler.Result{ResourceVersion: rv, ContentHash: ContentHash(payloadBytes(payload))}
	err = e.onDisk(ctx, func() error {
		if op.Kind == reconciler.Remount && res.ContentHash == op.LastHash && op.LastStamp.Intact(op.Dir) {
			res.Stamp = op.LastStamp
			return nil
		}
		// A remount of other bytes than the volume was last given need not
		// read the volume back to compare.
		differs := op.Kind == reconciler.Remount && op.LastHash != "" && res.ContentHash != op.LastHash
		res.Wrote, res.Stamp, err = e.writeVolume(logger, op, payload, differs)
		return err
	})
	if err != nil {
		return reconciler.Result{}, err
	}
	return res, nil
}

// writeVolume does steps (2) to (4) of setUp; differs is
// atomicwriter.Options.Differs.
func (e *executor) writeVolume(logger klog.Logger, op reconciler.Operation, payload map[string]atomicwriter.FileProjection, differs bool) (wrote bool, stamp atomicwriter.Stamp, err error) {
	req, v, dir := op.Request, op.Spec, op.Dir
	// (2)
	made, err := ensureVolumeDir(dir)
	if made {
		defer func() {
			if err != nil {
				_ = os.RemoveAll(dir)
			}
		}()
	}
	if err != nil {
		return false, stamp, err
	}
	// (3)
	if err := makeMountPoints(dir, req.MountPoints); err != nil {
		return false, stamp, err
	}
	// (4)
	if op.Layout == cache.LayoutInPlace {
		wrote, err = inplacewriter.Write(dir, payload, req.FSGroup, req.MountPoints)
	} else {
		opts := atomicwriter.Options{Differs: differs}
		if fsGroup := req.FSGroup; fsGroup != nil {
			opts.SetPerms = func() error { return setVolumeOwnership(logger, dir, *fsGroup) }
		}
		wrote, err = e.atomicWrite(dir, payload, opts)
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
// clear the setgid bit that an fsGroup set. It reports whether it made dir
// (or some of it, before an error).
func ensureVolumeDir(dir string) (made bool, err error) {
	info, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(dir, volumeDirMode); err != nil {
			return true, err
		}
		made = true
		info, err = os.Stat(dir)
	}
	if err != nil {
		return made, err
	}
	if info.Mode().Perm() != volumeDirMode {
		return made, os.Chmod(dir, volumeDirMode)
	}
	return made, nil
}

// makeMountPoints creates, inside the volume at dir, the directories on
// which a container mounts another volume (Request.MountPoints). The
// writer leaves them alone: they are not part of the payload. A point
// outside the volume, or at a name the writer reserves, fails the volume
// before anything is made.
func makeMountPoints(dir string, points []string) error {
	var invalid []string
	for _, p := range points {
		if !filepath.IsLocal(p) || strings.HasPrefix(p, "..") {
			invalid = append(invalid, strconv.Quote(p))
		}
	}
	if len(invalid) > 0 {
		return failure(CauseInvalidPayload, fmt.Errorf("a volume is mounted inside this one at %s: outside it, or at a name the volume's writer reserves", strings.Join(invalid, ", ")))
	}
	for _, p := range points {
		if err := os.MkdirAll(filepath.Join(dir, p), 0o755); err != nil {
			return failure(CauseDisk, fmt.Errorf("making the nested mount point %q: %w", p, err))
		}
	}
	return nil
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
