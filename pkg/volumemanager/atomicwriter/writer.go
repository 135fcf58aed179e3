// Package atomicwriter writes a set of files into a volume directory so that
// readers see either the whole old set or the whole new set, never a mix,
// with the kubelet's on-disk layout (docs/kubelet-behaviour.md, "The volume on disk"):
//
//	<dir>/..2026_11_22_02_06_44.3479019008/   a generation: the files themselves
//	<dir>/..data -> ..2026_11_22_02_06_44.3479019008
//	<dir>/<top-level name> -> ..data/<top-level name>
//
// A generation directory is never changed once ..data points at it; a new
// payload is written into a new one, and one rename(2) of a symlink
// switches readers from the old generation to the new.
//
// The writer owns the entries whose names start with ".." and the
// top-level symlinks into ..data. Anything else in the directory, such as
// the mount point of another volume that a container mounts inside this one,
// is left alone, as the kubelet leaves it.
//
// Beyond the kubelet, a Write repairs what a crash or a careless hand can
// leave behind: a stale ..data_tmp symlink (which makes every kubelet write
// fail), generation directories that ..data does not point at (half-written
// or not cleaned up), dangling or missing top-level symlinks, and a ..data
// that is not a symlink at all. A failed Write (disk full, permissions)
// removes its partial generation and leaves the previous one in place and
// readable.
//
// A Writer is not safe for concurrent use on one directory; the volume
// manager runs one operation per volume at a time.
package atomicwriter

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

const (
	dataDirName    = "..data"
	newDataDirName = "..data_tmp"
)

// FileProjection is one file of a payload.
type FileProjection struct {
	Data []byte
	Mode int32
	// User, where set, is the file's owner UID (a volume's defaultUser or
	// its item's user, KEP-5936); nil leaves it the writer's. As with
	// Mode, a change of it alone writes nothing.
	User *int64
}

// Options are a Write's choices; the zero value is the kubelet's writer.
type Options struct {
	// SetPerms, if not nil, runs after a new generation is written and
	// before it becomes visible (the volume manager applies the pod's
	// fsGroup there).
	SetPerms func() error
	// Differs says that the caller knows the payload's bytes differ from
	// the current generation's (the volume manager: their content hash
	// differs from what it last wrote there), so the Write skips reading
	// the generation back to compare. A wrong Differs costs a needless new
	// generation, never wrong content.
	Differs bool
}

// Write makes dir hold exactly payload (paths relative to dir). It reports
// whether it switched to a new generation. A payload that differs from the
// current generation only in file modes writes nothing, as in the kubelet.
func Write(dir string, payload map[string]FileProjection, opts Options) (changed bool, err error) {
	// (1) Validate every path before touching the disk.
	files, err := cleanPayload(payload)
	if err != nil {
		return false, err
	}

	// (2) Find the current generation, if any; a volume without one may
	// not have its directory yet.
	link, err := readDataLink(dir)
	if err != nil {
		return false, err
	}
	if link.target == "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return false, err
		}
	}

	// (3) Compare it with the payload, unless the caller knows they differ.
	current := link.target
	needWrite := current == "" || opts.Differs
	if !needWrite {
		same, err := generationEquals(filepath.Join(dir, current), files)
		if err != nil {
			return false, err
		}
		needWrite = !same
	}

	if needWrite {
		newGen, err := switchGeneration(dir, files, opts.SetPerms, link.blocked)
		if err != nil {
			return false, err
		}
		current = newGen
		changed = true
	}

	// (7) Make the top-level entries match: a symlink into ..data for each
	// top-level name of the payload, nothing else. (8) Remove every
	// generation but the current one. Both also repair crash leftovers, so
	// they run even when nothing was written; one listing serves both, as
	// each touches only the entries the other leaves alone.
	entries, err := listDir(dir)
	if err != nil {
		return changed, err
	}
	if err := syncTopLevel(dir, entries, files); err != nil {
		return changed, err
	}
	return changed, removeOtherGenerations(dir, entries, current)
}

// cleanPayload validates payload's paths and returns it keyed by the
// cleaned ones.
func cleanPayload(payload map[string]FileProjection) (map[string]FileProjection, error) {
	paths := make([]string, 0, len(payload))
	for p := range payload {
		paths = append(paths, p)
	}
	cleaned, err := ValidatePayloadPaths(paths)
	if err != nil {
		return nil, err
	}
	files := make(map[string]FileProjection, len(cleaned))
	for clean, original := range cleaned {
		files[clean] = payload[original]
	}
	return files, nil
}

// switchGeneration writes files into a new generation directory (4),
// applies setPerms to it, points ..data_tmp at it (5) and renames that over
// ..data (6), and returns its name. dataBlocked says that ..data is there
// but is not a symlink. A failure removes what it made and leaves ..data
// as it was.
func switchGeneration(dir string, files map[string]FileProjection, setPerms func() error, dataBlocked bool) (string, error) {
	// (4) Write the payload into a new generation directory.
	newGen, err := writeGeneration(dir, files)
	if err != nil {
		return "", err
	}
	tmpLink := filepath.Join(dir, newDataDirName)
	fail := func(err error, linked bool) (string, error) {
		if linked {
			os.Remove(tmpLink)
		}
		removeTree(filepath.Join(dir, newGen))
		return "", err
	}
	if setPerms != nil {
		if err := setPerms(); err != nil {
			return fail(fmt.Errorf("applying ownership: %w", err), false)
		}
	}
	// (5) Point ..data_tmp at it, replacing a stale one left by a crash.
	err = os.Symlink(newGen, tmpLink)
	if errors.Is(err, fs.ErrExist) {
		if err = os.Remove(tmpLink); err == nil {
			err = os.Symlink(newGen, tmpLink)
		}
	}
	if err != nil {
		return fail(err, false)
	}
	// (6) Rename it over ..data: the atomic switch. A ..data that is not a
	// symlink (a directory put there by hand) cannot be renamed over; it
	// holds no generation of ours, so it goes first.
	if dataBlocked {
		if err := os.RemoveAll(filepath.Join(dir, dataDirName)); err != nil {
			return fail(err, true)
		}
	}
	if err := os.Rename(tmpLink, filepath.Join(dir, dataDirName)); err != nil {
		return fail(err, true)
	}
	return newGen, nil
}

// writeGeneration writes files into a new timestamped directory. It does not
// fsync them, as the kubelet's writer does not: after a machine crash the
// agent compares every volume it finds with its ConfigMaps at its pod's
// first sync and rewrites what a lost write left wrong, and in an update
// storm the fsyncs were most of a write's cost (docs/reliability.md,
// "Durability").
func writeGeneration(dir string, files map[string]FileProjection) (string, error) {
	genDir, err := makeGeneration(dir)
	if err != nil {
		return "", err
	}
	fail := func(err error) (string, error) {
		removeTree(genDir)
		return "", err
	}
	made := map[string]bool{".": true} // the directories of the payload made so far
	for p, f := range files {
		full := filepath.Join(genDir, filepath.FromSlash(p))
		if parent := path.Dir(p); !made[parent] {
			if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
				return fail(err)
			}
			made[parent] = true
		}
		if err := writeFileHook(full, f.Data, os.FileMode(f.Mode)&os.ModePerm); err != nil {
			return fail(fmt.Errorf("writing %s: %w", p, err))
		}
		if err := setOwner(full, f.User); err != nil {
			return fail(fmt.Errorf("writing %s: %w", p, err))
		}
	}
	return filepath.Base(genDir), nil
}

// writeFileHook is replaced in tests to fail a write midway, as a full disk
// would.
var writeFileHook = writeNewFile

// removeOtherGenerations removes, of the entries of dir, the generation
// directories other than keep, and a stale ..data_tmp.
func removeOtherGenerations(dir string, entries []dirEntry, keep string) error {
	var errs []error
	for _, e := range entries {
		name := e.Name()
		if name == dataDirName || name == keep || !strings.HasPrefix(name, "..") {
			continue
		}
		remove := os.Remove
		if e.IsDir() {
			remove = removeTree
		}
		if err := remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// ReadCurrent returns the files of the current generation, for debugging
// and verification. A directory never written returns an empty map.
func ReadCurrent(dir string) (map[string][]byte, error) {
	gen, err := currentGeneration(dir)
	if err != nil || gen == "" {
		return map[string][]byte{}, err
	}
	genDir := filepath.Join(dir, gen)
	files := map[string][]byte{}
	err = filepath.WalkDir(genDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(genDir, p)
		files[filepath.ToSlash(rel)] = data
		return nil
	})
	return files, err
}

// Repair fixes crash leftovers in dir without a payload, as the agent does
// at start-up: the current generation's top-level names get their symlinks
// and nothing else stays visible; other generations and a stale ..data_tmp
// go. A directory without a usable generation is left for the next Write.
func Repair(dir string) error {
	gen, err := currentGeneration(dir)
	if err != nil || gen == "" {
		return err
	}
	entries, err := os.ReadDir(filepath.Join(dir, gen))
	if err != nil {
		return err
	}
	topLevel := make(map[string]FileProjection, len(entries))
	for _, e := range entries {
		topLevel[e.Name()] = FileProjection{}
	}
	dirEntries, err := listDir(dir)
	if err != nil {
		return err
	}
	if err := syncTopLevel(dir, dirEntries, topLevel); err != nil {
		return err
	}
	return removeOtherGenerations(dir, dirEntries, gen)
}

// RemoveOwn removes what the writer owns in dir (the entries whose names
// start with "..", and the top-level symlinks into ..data), then dir
// itself if nothing else is left. It is for a volume whose owner lost its
// record of it: the writer's files are told from anything else by their
// layout alone. Anything else stays, and dir with it, and the error names
// it. A dir that does not exist is not an error.
func RemoveOwn(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var others []string
	for _, e := range entries {
		name := e.Name()
		path := filepath.Join(dir, name)
		if strings.HasPrefix(name, "..") {
			if err := os.RemoveAll(path); err != nil {
				return err
			}
			continue
		}
		if target, err := os.Readlink(path); err == nil && strings.HasPrefix(target, dataDirName+"/") {
			if err := os.Remove(path); err != nil {
				return err
			}
			continue
		}
		others = append(others, name)
	}
	if len(others) > 0 {
		return fmt.Errorf("%s holds %q, which the writer did not write; left as it is", dir, others)
	}
	return os.Remove(dir)
}
