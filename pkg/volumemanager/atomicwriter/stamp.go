package atomicwriter

import (
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Stamp records what a volume directory held after a Write, so that Intact
// can tell later, from one lstat(2) per entry and no reads, whether any of
// it changed since: the directory itself, the ..data symlink, the current
// generation and every directory and file of the payload in it.
//
// Each entry is identified by its inode and its change time (ctime). Every
// change to an entry updates its ctime, and no call can set a ctime back,
// so an edited, truncated, chmod-ed, chown-ed, replaced or deleted file is
// seen, and so is any entry added to or removed from the volume directory
// or a generation directory (their ctime changes with their listing): a
// deleted or retargeted top-level symlink, a new ..data, a stray file. A
// zero Stamp is never intact.
//
// The kernel stamps ctimes from a coarse clock (a few milliseconds; a
// second on some filesystems), so a change made just after the Write can
// carry the same ctime as the Write's own. As git does with its index, a
// stamp taken while any entry's ctime is within racyWindow of now is racy
// and never intact: the first check after a Write
// compares the files in full and stamps again.
type Stamp struct {
	entries []stampEntry
}

// racyWindow covers the coarsest ctime granularity of a kubelet root
// filesystem.
const racyWindow = 2 * time.Second

type stampEntry struct {
	path string // relative to the volume directory; "" is the directory
	id   fileID
}

// StampOf lstats dir's entries after a Write of payloadPaths (the paths of
// the payload just written, as given to Write); now is the wall clock's
// time, which the ctimes are compared with.
func StampOf(dir string, payloadPaths []string, now time.Time) (Stamp, error) {
	// The directory first: a Write that switched generations has just
	// changed its listing, so such a stamp is racy from its first call.
	dirID, err := lstatID(dir)
	if err != nil || !dirID.valid || racy(dirID, now) {
		return Stamp{}, err
	}
	gen, err := currentGeneration(dir)
	if err != nil || gen == "" {
		return Stamp{}, err
	}
	paths := []string{dataDirName, gen}
	seen := map[string]bool{}
	for _, p := range payloadPaths {
		rel := filepath.Clean(p)
		// The directories on the way to the file, then the file.
		parts := strings.Split(filepath.ToSlash(rel), "/")
		for i := 1; i <= len(parts); i++ {
			full := filepath.Join(gen, filepath.Join(parts[:i]...))
			if !seen[full] {
				seen[full] = true
				paths = append(paths, full)
			}
		}
	}
	entries := make([]stampEntry, 1, 1+len(paths))
	entries[0] = stampEntry{path: "", id: dirID}
	for _, p := range paths {
		id, err := lstatID(filepath.Join(dir, p))
		if err != nil || !id.valid || racy(id, now) {
			return Stamp{}, err
		}
		entries = append(entries, stampEntry{path: p, id: id})
	}
	return Stamp{entries: entries}, nil
}

// racy says whether an entry's ctime is too near now to tell a later
// change from the Write's own (see Stamp).
func racy(id fileID, now time.Time) bool {
	return !id.ctime().Before(now.Add(-racyWindow))
}

// Intact says whether every entry of dir that s recorded is still as it
// was.
func (s Stamp) Intact(dir string) bool {
	if len(s.entries) == 0 {
		return false
	}
	for _, e := range s.entries {
		id, err := lstatID(filepath.Join(dir, e.path))
		if err != nil || !id.valid || id != e.id {
			return false
		}
	}
	return true
}

// lstatID is the identity of the entry at path, not following a symlink.
func lstatID(path string) (fileID, error) {
	info, err := os.Lstat(path)
	if err != nil {
		return fileID{}, err
	}
	return idOf(info), nil
}
