// Package inplacewriter writes a volume's files as plain files, and
// rewrites a changed file through its own inode, so that a container that
// mounts one file of the volume (a subPath mount, which binds that inode)
// sees every update. The atomic writer's layout cannot give that: it swaps
// a symlink to a new generation, and a bind mount of a file of the old
// generation keeps the old file for the life of the container.
//
// The price is atomicity across files and within one: a reader may see some
// files of an update before others, and one file in the middle of its
// rewrite. Write keeps that window as short as the kernel allows, in this
// order (docs/csi.md, "What a reader sees during an update in place"):
//
//   - a new file is written under a temporary name beside its path, given its
//     mode, owner and group, synced, and renamed into place: a reader sees no file
//     or the whole file, never a part;
//   - a changed file keeps its inode: (1) the blocks the new content needs
//     are allocated first (fallocate, keeping the size), so that a full disk
//     fails the write before any byte changes and the old content stays;
//     (2) the new content is written over the old from offset 0 in one
//     pwrite; (3) the file is truncated to the new length; (4) synced. A
//     reader sees the old content, the new one, or, only while (2) copies or
//     between (2) and (3), the new bytes followed by the old content's tail.
//     It never sees an empty file, which truncating first would show for
//     the whole of the write;
//   - a mode, owner (FileProjection.User) or group that changes is set
//     after the content, on the same inode, and all are already right on a
//     new file when it appears;
//   - a path that is no longer in the payload is removed last (a container
//     that mounted that one file keeps its last content: the kernel keeps
//     the inode while it is mounted).
//
// Everything in the directory is the writer's but the mount points of other
// volumes that a container mounts inside this one (Write's mountPoints,
// made by the caller): it removes what the payload does not name, leftovers
// of an interrupted write included, and never enters or removes a mount
// point. A payload path on or under a mount point is invalid. Write is not
// safe for concurrent use on one directory; the volume manager runs one
// operation per volume at a time.
package inplacewriter

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/nodeagent-io/nodeagent/pkg/volumemanager/atomicwriter"
)

// tempPrefix names the temporary files of new files; a leftover one (a
// crash between create and rename) is removed by the next Write.
const tempPrefix = ".nodeagent-new-"

// Write makes dir (which must exist) hold exactly payload, paths relative
// to dir, each file rewritten in place when it changes. fsGroup, if not
// nil, is applied as the kubelet applies a pod's fsGroup to a read-only
// volume: group fsGroup, files gain r--r-----, directories also gain x and
// the setgid bit. mountPoints, relative to dir, are left as they are, with
// the directories on the way to them. It reports whether anything on disk
// changed.
func Write(dir string, payload map[string]atomicwriter.FileProjection, fsGroup *int64, mountPoints []string) (changed bool, err error) {
	paths := make([]string, 0, len(payload))
	for p := range payload {
		paths = append(paths, p)
	}
	cleaned, err := atomicwriter.ValidatePayloadPaths(paths)
	if err != nil {
		return false, err
	}
	w := writer{dir: dir, fsGroup: fsGroup, mountPoints: map[string]bool{}}
	keep := map[string]bool{}
	for _, m := range mountPoints {
		m = filepath.Clean(m)
		w.mountPoints[m] = true
		keepWithParents(keep, m)
	}
	order := make([]string, 0, len(cleaned))
	for c := range cleaned {
		if m, ok := w.mountPointOn(c); ok {
			return false, fmt.Errorf("%w: %s is on the mount point %s of another volume", atomicwriter.ErrInvalidPath, c, m)
		}
		order = append(order, c)
		keepWithParents(keep, c)
	}
	sort.Strings(order)
	for _, c := range order {
		file := payload[cleaned[c]]
		if err := w.ensureParents(c); err != nil {
			return w.changed, err
		}
		if err := w.writeFile(c, file); err != nil {
			return w.changed, fmt.Errorf("writing %s: %w", c, err)
		}
	}
	if err := w.removeUnlisted(keep); err != nil {
		return w.changed, err
	}
	return w.changed, nil
}

// writer is one Write's state.
type writer struct {
	dir     string
	fsGroup *int64
	// mountPoints are the cleaned mount points, never entered.
	mountPoints map[string]bool
	changed     bool
}

// keepWithParents marks rel and every directory on the way to it.
func keepWithParents(keep map[string]bool, rel string) {
	for d := rel; d != "."; d = filepath.Dir(d) {
		keep[d] = true
	}
}

// mountPointOn returns the mount point that rel is, or lies under.
func (w *writer) mountPointOn(rel string) (string, bool) {
	for d := rel; d != "."; d = filepath.Dir(d) {
		if w.mountPoints[d] {
			return d, true
		}
	}
	return "", false
}

// fileMode is the mode a file of the payload ends with.
func (w *writer) fileMode(mode os.FileMode) os.FileMode {
	if w.fsGroup != nil {
		mode |= 0o440
	}
	return mode
}

// ensureParents makes the directories on the way to rel, replacing
// anything else that stands on one of them (a file of an older payload).
func (w *writer) ensureParents(rel string) error {
	parts := strings.Split(filepath.Dir(rel), string(filepath.Separator))
	if parts[0] == "." {
		return nil
	}
	for i := range parts {
		p := filepath.Join(w.dir, filepath.Join(parts[:i+1]...))
		info, err := os.Lstat(p)
		if err == nil && info.IsDir() {
			continue
		}
		if err == nil {
			if err := os.Remove(p); err != nil {
				return err
			}
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		if err := os.Mkdir(p, 0o755); err != nil {
			return err
		}
		w.changed = true
		if err := w.applyGroupToDir(p); err != nil {
			return err
		}
	}
	return nil
}

// applyGroupToDir gives a new directory the fsGroup's group and mode bits.
func (w *writer) applyGroupToDir(p string) error {
	if w.fsGroup == nil {
		return nil
	}
	if err := os.Lchown(p, -1, int(*w.fsGroup)); err != nil {
		return err
	}
	return os.Chmod(p, 0o755|os.ModeSetgid)
}

// writeFile makes rel hold file's data with its mode and owner, in place
// if it is a file.
func (w *writer) writeFile(rel string, file atomicwriter.FileProjection) error {
	path := filepath.Join(w.dir, rel)
	info, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return w.create(path, file)
	case err != nil:
		return err
	case !info.Mode().IsRegular():
		if err := os.RemoveAll(path); err != nil {
			return err
		}
		return w.create(path, file)
	}
	return w.rewrite(path, info, file)
}

// create writes a new file under a temporary name and renames it into
// place, so that it appears whole.
func (w *writer) create(path string, file atomicwriter.FileProjection) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), tempPrefix)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(f.Name())
		}
	}()
	if _, err = f.Write(file.Data); err != nil {
		return err
	}
	if err = w.setModeAndOwner(f, file); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(f.Name(), path); err != nil {
		return err
	}
	w.changed = true
	return nil
}

// setModeAndOwner sets an open file's mode, whatever the umask, its owner
// (file.User) and its group (the fsGroup), where they are set.
func (w *writer) setModeAndOwner(f *os.File, file atomicwriter.FileProjection) error {
	uid, gid := -1, -1
	if file.User != nil {
		uid = int(*file.User)
	}
	if w.fsGroup != nil {
		gid = int(*w.fsGroup)
	}
	if uid != -1 || gid != -1 {
		if err := f.Chown(uid, gid); err != nil {
			return err
		}
	}
	return f.Chmod(w.fileMode(modeOf(file)))
}

func modeOf(file atomicwriter.FileProjection) os.FileMode {
	return os.FileMode(file.Mode) & os.ModePerm
}

// rewrite updates an existing file through its inode (see the package
// doc for the order), or leaves it when content, mode and group are right.
func (w *writer) rewrite(path string, info fs.FileInfo, file atomicwriter.FileProjection) error {
	data := file.Data
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	same := info.Size() == int64(len(data))
	if same {
		current, err := io.ReadAll(f)
		if err != nil {
			return err
		}
		same = bytes.Equal(current, data)
	}
	if !same {
		// (1)
		if err := preallocate(f, int64(len(data))); err != nil {
			return fmt.Errorf("reserving %d bytes (the old content stays): %w", len(data), err)
		}
		// (2)
		if _, err := f.WriteAt(data, 0); err != nil {
			return err
		}
		// (3)
		if err := f.Truncate(int64(len(data))); err != nil {
			return err
		}
		// (4)
		if err := f.Sync(); err != nil {
			return err
		}
		w.changed = true
	}
	if info.Mode().Perm() != w.fileMode(modeOf(file)) || !hasGroup(info, w.fsGroup) || !hasOwner(info, file.User) {
		if err := w.setModeAndOwner(f, file); err != nil {
			return err
		}
		w.changed = true
	}
	return f.Close()
}

// removeUnlisted removes every entry of the directory that is neither a
// payload path nor a directory on the way to one.
func (w *writer) removeUnlisted(keep map[string]bool) error {
	var stale []string
	err := filepath.WalkDir(w.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(w.dir, p)
		if w.mountPoints[rel] {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if rel == "." || keep[rel] {
			return nil
		}
		stale = append(stale, p)
		if d.IsDir() {
			return filepath.SkipDir
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, p := range stale {
		if err := os.RemoveAll(p); err != nil {
			return err
		}
		w.changed = true
	}
	return nil
}
