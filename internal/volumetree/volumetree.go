// Package volumetree reads a volume directory as a tree of entries (type,
// mode, owner, link target, content hash), from the local disk or from a tar
// stream of a node's disk, with the atomic writer's timestamped generation
// names replaced by one placeholder, so that the volumes two writers made
// (nodeagent and the kubelet) compare equal when their files do. The
// end-to-end tests use it to hold nodeagent's volumes to the kubelet's.
package volumetree

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
)

// Kind is what an entry is.
type Kind string

const (
	File    Kind = "file"
	Dir     Kind = "dir"
	Symlink Kind = "link"
)

// Entry is one path of a volume.
type Entry struct {
	Kind Kind
	// Mode holds the permission bits and setuid, setgid and sticky, as
	// 0o7777.
	Mode int64
	// Target is a symlink's target, generation names replaced.
	Target string
	// SHA256 is a file's content hash, hex.
	SHA256 string
	// UID and GID own the entry itself (a symlink's, not its target's).
	UID, GID int
}

func (e Entry) String() string {
	owner := fmt.Sprintf(" owner %d:%d", e.UID, e.GID)
	switch e.Kind {
	case Symlink:
		return "link -> " + e.Target + owner
	case File:
		return fmt.Sprintf("file %04o sha256 %.12s", e.Mode, e.SHA256) + owner
	}
	return fmt.Sprintf("%s %04o", e.Kind, e.Mode) + owner
}

// Tree maps each path below a volume's directory (slash-separated,
// generation names replaced by Generation) to its entry.
type Tree map[string]Entry

// Generation stands for the atomic writer's timestamped directory names
// (..2026_11_22_02_06_44.3479019008), which hold the time of the write.
const Generation = "..<generation>"

var timestamped = regexp.MustCompile(`\.\.\d{4}_\d{2}_\d{2}_\d{2}_\d{2}_\d{2}\.\d+`)

func normalise(path string) string { return timestamped.ReplaceAllString(path, Generation) }

// Read reads the volume directory dir from the local disk. It fails if dir
// is missing or changes while it is read.
func Read(dir string) (Tree, error) {
	tree := Tree{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if path == dir {
			return nil
		}
		rel, _ := filepath.Rel(dir, path)
		info, err := os.Lstat(path)
		if err != nil {
			return err
		}
		e := Entry{Mode: int64(info.Mode().Perm())}
		for _, bit := range []struct {
			mode fs.FileMode
			bits int64
		}{{fs.ModeSetuid, 0o4000}, {fs.ModeSetgid, 0o2000}, {fs.ModeSticky, 0o1000}} {
			if info.Mode()&bit.mode != 0 {
				e.Mode |= bit.bits
			}
		}
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(path)
			if err != nil {
				return err
			}
			e = Entry{Kind: Symlink, Target: normalise(target)}
		case info.IsDir():
			e.Kind = Dir
		default:
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(data)
			e.Kind, e.SHA256 = File, hex.EncodeToString(sum[:])
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			e.UID, e.GID = int(st.Uid), int(st.Gid)
		}
		tree[normalise(filepath.ToSlash(rel))] = e
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", dir, err)
	}
	return tree, nil
}

// FromTar reads a volume from a tar stream of its directory (tar -C dir -cf - .).
func FromTar(r io.Reader) (Tree, error) {
	tree := Tree{}
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return tree, nil
		}
		if err != nil {
			return nil, err
		}
		name := strings.TrimSuffix(strings.TrimPrefix(hdr.Name, "./"), "/")
		if name == "." || name == "" {
			continue
		}
		e := Entry{Mode: hdr.Mode & 0o7777}
		switch hdr.Typeflag {
		case tar.TypeSymlink:
			e = Entry{Kind: Symlink, Target: normalise(hdr.Linkname)}
		case tar.TypeDir:
			e.Kind = Dir
		default:
			h := sha256.New()
			if _, err := io.Copy(h, tr); err != nil {
				return nil, err
			}
			e.Kind, e.SHA256 = File, hex.EncodeToString(h.Sum(nil))
		}
		e.UID, e.GID = hdr.Uid, hdr.Gid
		tree[normalise(name)] = e
	}
}

// Diff lists, sorted, the paths where got differs from want, naming the
// two sides wantName and gotName; nil when they are equal.
func Diff(want, got Tree, wantName, gotName string) []string {
	var diffs []string
	for path, w := range want {
		if g, ok := got[path]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s: %s has %s, %s has none", path, wantName, w, gotName))
		} else if g != w {
			diffs = append(diffs, fmt.Sprintf("%s: %s has %s, %s has %s", path, wantName, w, gotName, g))
		}
	}
	for path, g := range got {
		if _, ok := want[path]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s: %s has none, %s has %s", path, wantName, gotName, g))
		}
	}
	sort.Strings(diffs)
	return diffs
}
