package csidriver

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/nodeagent-io/nodeagent/pkg/volumemanager/core"
)

// maxObjectBytes is the most an object's data can hold: the API server
// refuses a ConfigMap or Secret of more than 1 MiB.
const maxObjectBytes = 1 << 20

// withdrawWait bounds how long a publish that failed waits for the core
// to let go of the volume before it unmounts the volume's tmpfs.
const withdrawWait = 10 * time.Second

// tmpfsMounts keep Secret bytes off the node's disk (the Secrets mode): a
// volume that reads a Secret is a tmpfs of its own, mounted at its target
// path before its files are written and unmounted after they are gone.
//
// A tmpfs is sized for two copies of the most its objects can hold (the
// atomic writer's old and new generations), 1 MiB each, and a megabyte
// more for the writer's own files: a bound the kubelet's Secret volumes
// do not have (theirs is the pod's memory limit, or the node's
// allocatable memory), and that the driver can compute from the volume
// alone. Its pages are charged to the driver's memory cgroup, which
// writes them.
type tmpfsMounts struct {
	mounter Mounter
}

// Mounter mounts and unmounts tmpfs mounts, and tells a mount point: the
// node's (NodeMounter), or a test's.
type Mounter interface {
	MountTmpfs(target string, sizeBytes int64) error
	Unmount(target string) error
	IsLikelyNotMountPoint(dir string) (bool, error)
}

// NodeMounter mounts with the mount(2) and umount(2) system calls, not the
// mount command, which the driver's distroless image does not have, and
// tells a mount point as k8s.io/mount-utils does (a device unlike its
// parent's).
type NodeMounter struct{}

// MountTmpfs mounts a tmpfs of sizeBytes at target, nosuid and nodev.
func (NodeMounter) MountTmpfs(target string, sizeBytes int64) error {
	if err := unix.Mount("tmpfs", target, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, fmt.Sprintf("size=%d", sizeBytes)); err != nil {
		return &os.PathError{Op: "mount tmpfs", Path: target, Err: err}
	}
	return nil
}

// Unmount unmounts target.
func (NodeMounter) Unmount(target string) error {
	if err := unix.Unmount(target, 0); err != nil {
		return &os.PathError{Op: "umount", Path: target, Err: err}
	}
	return nil
}

// IsLikelyNotMountPoint says whether dir is not a mount point; a bind
// mount of a directory of the same file system is not told.
func (NodeMounter) IsLikelyNotMountPoint(dir string) (bool, error) {
	return core.IsLikelyNotMountPoint(dir)
}

// tmpfsSize is the size of the tmpfs of a volume that reads objects
// objects.
func tmpfsSize(objects int) int64 { return int64(2*objects+1) * maxObjectBytes }

// ensure mounts a tmpfs at target unless one is mounted there already (a
// publish after a driver restart).
func (t *tmpfsMounts) ensure(target string, objects int) error {
	if err := os.MkdirAll(target, 0o750); err != nil {
		return err
	}
	notMounted, err := t.mounter.IsLikelyNotMountPoint(target)
	if err != nil {
		return err
	}
	if !notMounted {
		return nil
	}
	return t.mounter.MountTmpfs(target, tmpfsSize(objects))
}

// remove unmounts the tmpfs at target, if one is mounted, and removes the
// directory; a target already gone is no error.
func (t *tmpfsMounts) remove(target string) error {
	notMounted, err := t.mounter.IsLikelyNotMountPoint(target)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return err
	case !notMounted:
		if err := t.mounter.Unmount(target); err != nil {
			return err
		}
	}
	if err := os.Remove(target); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// mountTmpfs mounts the tmpfs of a new volume that reads a Secret.
func (s *nodeServer) mountTmpfs(spec volumeSpec, rec record) error {
	if s.tmpfs == nil || !spec.Source.HoldsSecrets() {
		return nil
	}
	if err := s.tmpfs.ensure(rec.TargetPath, len(spec.objects())); err != nil {
		return status.Errorf(codes.Internal, "mounting a tmpfs at %s for a volume that reads a Secret: %v", rec.TargetPath, err)
	}
	return nil
}

// unmountTmpfs unmounts a volume's tmpfs, if it has one: after the core
// removed its files.
func (s *nodeServer) unmountTmpfs(spec volumeSpec, target string) error {
	if s.tmpfs == nil || !spec.Source.HoldsSecrets() {
		return nil
	}
	return s.tmpfs.remove(target)
}
